/**
 * Whether a process with this pid exists (signal 0 delivers nothing, it only checks): true when it does, also when
 * it is another user's (EPERM); false once it is gone. A zombie not yet reaped still counts as existing.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
