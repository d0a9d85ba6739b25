// Entry of the CPU kernel probe child process (src/engine/cpu-kernels.ts): registers tsx, then runs the probe.
import { register } from 'tsx/esm/api';

register();
await import('./cpu-kernel-probe.ts');
