/** CPU seconds one Redis server has used so far (user + system), from INFO cpu. Shared by the benches that print Redis CPU per job. */
export async function redisCpu(r: { info(section: 'cpu'): Promise<string> }): Promise<number> {
  const info = await r.info('cpu');
  const get = (k: string) => Number(new RegExp(`${k}:([0-9.]+)`).exec(info)?.[1] ?? 0);
  return get('used_cpu_user') + get('used_cpu_sys');
}
