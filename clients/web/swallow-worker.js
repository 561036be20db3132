// oplite's database Worker for the multi-tab commit check (shared-tab.mjs
// swallow): as the owner, this Worker serves the other tabs (tabs.js), and
// here it can keep their answers, as if its tab closed right after running
// their calls. The page tells it what to keep over the BroadcastChannel
// named in this script's `control` parameter: {keep} (null none, 'commits'
// the answers of calls that committed, 'all' every one), acknowledged with
// {kept}; each kept answer is reported with {dropped}.
import '/oplite/oplite-worker.js';

const control = new BroadcastChannel(new URL(self.location.href).searchParams.get('control'));
const post = BroadcastChannel.prototype.postMessage;
let keeping = null;

control.onmessage = ({ data }) => {
  keeping = data.keep;
  post.call(control, { kept: keeping });
};

BroadcastChannel.prototype.postMessage = function (message) {
  if (this !== control && message?.type === 'result' && (keeping === 'all' || (keeping === 'commits' && message.result?.marked != null))) {
    post.call(control, { dropped: 1 });
    return;
  }
  return post.call(this, message);
};
