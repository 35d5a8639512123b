import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * Lua that mirrors BullMQ's, built from the Lua the installed BullMQ ships rather than from hand copies.
 *
 * BullMQ keeps its scripts in `dist/cjs/commands/*.lua` and the functions they share in
 * `commands/includes/*.lua`; a file pulls one in with a line `--- @include "includes/removeLock"` (an
 * include's own are relative to the includes folder: `--- @include "addBaseMarkerIfNeeded"`). bullmqLua
 * resolves those lines as BullMQ's ScriptLoader does (src/commands/script-loader.ts in BullMQ's repository):
 * each file once per script, recursively, its own includes first, in the place of the first line that asks
 * for it; a later line asking for it again is dropped; a file asking for the same one twice, a circle, or a
 * file that is not there is an error. A tickwork source is read as if it were one of BullMQ's command files
 * (its includes relative to the commands folder). The result is ordinary Lua for defineScript/runScript
 * (@tickwork/core), the one way tickwork runs Lua. BullMQ's include functions call a global `rcall`: a
 * source defines `local rcall = redis.call` above its first include, as BullMQ's scripts do.
 *
 * Not supported (BullMQ's own files use none of it): mapped paths (`<base>/...`, `~/...`) and glob patterns.
 */

/** A line that includes a file, as BullMQ's ScriptLoader's IncludeRegex reads it (quote, name, same quote). */
const INCLUDE_LINE = /^-{2,3}[ \t]*@include[ \t]+(["'])(.+?)\1[; \t\r]*$/;

let commandsDir: string | undefined;
const texts = new Map<string, string>();

/** The installed BullMQ's commands folder (`.../bullmq/dist/cjs/commands`), the one its scripts are loaded from. */
export function bullmqCommandsDir(): string {
  commandsDir ??= path.join(path.dirname(createRequire(import.meta.url).resolve('bullmq')), 'commands');
  return commandsDir;
}

/**
 * The text of one of the installed BullMQ's Lua files, as shipped (its include lines unresolved): `relative`
 * to the commands folder, e.g. 'moveToFinished-14.lua' or 'includes/prepareJobForProcessing.lua'.
 */
export function bullmqFileText(relative: string): string {
  return readLua(path.resolve(bullmqCommandsDir(), relative), relative);
}

/**
 * `source` with every `--- @include "<name>"` line replaced by the installed BullMQ's include text, each file
 * once, its own includes first (see above). Throws an Error naming the include and BullMQ's commands folder
 * when one is not found.
 */
export function bullmqLua(source: string): string {
  return expand(source, bullmqCommandsDir(), '<source>', new Set(), []);
}

/** `text` (the file `file`, in `dir`) with its includes resolved; `emitted`: files already in the script. */
function expand(text: string, dir: string, file: string, emitted: Set<string>, stack: readonly string[]): string {
  const lines = text.split('\n');
  const asked = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const match = INCLUDE_LINE.exec(lines[i] as string);
    if (!match) continue;
    const name = match[2] as string;
    const target = path.resolve(dir, path.extname(name) ? name : `${name}.lua`);
    if (asked.has(target)) throw new Error(`bullmqLua: "${name}" is included twice in ${file} (BullMQ's commands: ${bullmqCommandsDir()})`);
    asked.add(target);
    if (stack.includes(target)) throw new Error(`bullmqLua: circular include of "${name}" in ${file} (BullMQ's commands: ${bullmqCommandsDir()})`);
    if (emitted.has(target)) {
      lines[i] = '';
      continue;
    }
    const included = readLua(target, name, file);
    lines[i] = expand(included, path.dirname(target), target, emitted, [...stack, target]);
    emitted.add(target);
  }
  return lines.join('\n');
}

/** The file at `absolute` (cached: the installed BullMQ does not change while a process runs). */
function readLua(absolute: string, name: string, from?: string): string {
  let text = texts.get(absolute);
  if (text === undefined) {
    try {
      text = readFileSync(absolute, 'utf8');
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : `unreadable (${err instanceof Error ? err.message : String(err)})`;
      throw new Error(`bullmqLua: BullMQ's Lua "${name}"${from ? ` (included in ${from})` : ''} is ${why} in the installed BullMQ's commands folder ${bullmqCommandsDir()}`);
    }
    texts.set(absolute, text);
  }
  return text;
}
