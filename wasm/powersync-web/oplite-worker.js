// The database Worker of @oplite/powersync-web: oplite-host.js behind
// postMessage (OPFS needs a dedicated Worker).
import { createHost } from './oplite-host.js';

const handle = createHost((message) => postMessage(message));
onmessage = ({ data }) => handle(data);
