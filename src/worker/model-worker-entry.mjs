// Piscina's entry for model workers. Worker threads do not inherit the TypeScript loader, so this
// plain-JS shim registers tsx in the worker, then loads the real worker module (model-worker.ts).
import { register } from 'tsx/esm/api';

register();
const worker = await import('./model-worker.ts');
export default worker.default;
/** The `embed` task (Piscina's `name: 'embed'`). */
export const embed = worker.embed;
