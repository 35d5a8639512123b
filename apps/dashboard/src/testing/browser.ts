import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Launches the machine's Chromium (Debian's `chromium` package; `.ci/run` installs it) headless through
 * playwright-core, which ships no browser of its own. CHROMIUM_PATH points elsewhere.
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(executablePath)) {
    throw new Error(
      `no Chromium at ${executablePath}: install it (apt-get install chromium, as .ci/run does) or set CHROMIUM_PATH to a Chromium binary`,
    );
  }
  // No sandbox: CI runs as root, where Chromium refuses its sandbox; the pages are our own, on localhost.
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
}
