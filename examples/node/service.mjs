// Starts the loopback test service serving the recorded todo-list session
// (the same session oplite's own tests replay). Resolves to { url, stop }.
import { spawn } from 'node:child_process';
import { recordedSession, serverPath } from './paths.mjs';

export async function startLoopbackService() {
  const child = spawn(serverPath(), ['--recorded', recordedSession], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const url = out.match(/listening on (http:\/\/\S+)/)?.[1];
      if (url) resolve({ url, stop: () => child.kill() });
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`oplite-test-server exited with ${code} before it listened`)));
  });
}
