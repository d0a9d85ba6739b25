// Entry of the GPU probe child process (src/engine/gpu-offload.ts): registers tsx, then runs the probe.
import { register } from 'tsx/esm/api';

register();
await import('./gpu-probe.ts');
