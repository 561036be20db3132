// Unit tests of the adapter's lock queues (powersync-web/slots.js) and of
// the tab protocol (powersync-web/tabs.js) in Node, without a database:
// the host's statement calls are recorded, Web Locks are a small in-memory
// stand-in, and tabs talk over Node's own BroadcastChannel. The browser
// checks (clients/web, tabs-checks.mjs) run the same code with real tabs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Slots } from '../powersync-web/slots.js';
import { TabClient, TabServer } from '../powersync-web/tabs.js';

// navigator.locks with request(name, [options], fn) and query(), enough for tabs.js.
function installLocks() {
  const held = new Map();
  const waiting = new Map();
  const grant = (name, fn) => {
    held.set(name, true);
    return Promise.resolve(fn({ name })).finally(() => {
      held.delete(name);
      const next = waiting.get(name)?.shift();
      if (next) next();
    });
  };
  const locks = {
    request(name, options, fn) {
      if (typeof options === 'function') [fn, options] = [options, {}];
      if (!held.has(name)) return grant(name, fn);
      if (options.ifAvailable) return Promise.resolve(fn(null));
      return new Promise((resolve) => {
        if (!waiting.has(name)) waiting.set(name, []);
        waiting.get(name).push(() => resolve(grant(name, fn)));
      });
    },
    async query() {
      return { held: [...held.keys()].map((name) => ({ name })) };
    },
  };
  Object.defineProperty(globalThis, 'navigator', { value: { locks }, configurable: true });
}
installLocks();

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

// The order in which fns ran, each in a lock of new Slots (with a reader
// or not); run(read, name, ms) runs one of `ms` ms.
function recorder(hasReader = true) {
  const slots = new Slots({ hasReader, durable: async () => {} });
  const order = [];
  const run = (read, name, ms = 0) => slots.run(read, async () => {
    order.push(`${name} start`);
    await new Promise((resolve) => setTimeout(resolve, ms));
    order.push(`${name} end`);
  });
  // Runs [read, name, ms] locks asked for together; resolves to the order.
  const together = async (...locks) => {
    order.length = 0;
    await Promise.all(locks.map((l) => run(...l)));
    return [...order];
  };
  return { slots, order, run, together };
}

test('a read lock waits for the write locks asked for before it', async () => {
  const { together } = recorder();
  assert.deepEqual(await together([false, 'write', 20], [true, 'read']), ['write start', 'write end', 'read start', 'read end']);
});

test("while the sync client's write lock runs, reads asked for do not wait for it", async () => {
  const { slots, order, run, together } = recorder();
  const write = slots.run(false, async () => {
    slots.syncing();
    order.push('sync start');
    await run(true, 'read');
    order.push('sync end');
  });
  await write;
  assert.deepEqual(order, ['sync start', 'read start', 'read end', 'sync end']);
  // The next write lock is no longer the sync client's: reads wait again.
  assert.deepEqual(await together([false, 'write', 20], [true, 'read']), ['write start', 'write end', 'read start', 'read end']);
});

test('without a reader, read locks take turns on the writer', async () => {
  const { together } = recorder(false);
  assert.deepEqual(await together([true, 'read 1', 20], [true, 'read 2']), ['read 1 start', 'read 1 end', 'read 2 start', 'read 2 end']);
});

test('a write lock ends once durable resolved, before the next one starts', async () => {
  const order = [];
  const slots = new Slots({ hasReader: true, durable: async () => { order.push('durable'); await tick(); order.push('durable done'); } });
  await Promise.all([
    slots.run(false, async () => order.push('write 1')),
    slots.run(false, async () => order.push('write 2')),
  ]);
  assert.deepEqual(order, ['write 1', 'durable', 'durable done', 'write 2', 'durable', 'durable done']);
});

test('a lock released before its turn never runs, and the queue goes on', async () => {
  const slots = new Slots({ hasReader: true, durable: async () => {} });
  assert.equal(await slots.acquire('a', false), true);
  const dropped = slots.acquire('b', false);
  const next = slots.acquire('c', false);
  await slots.release('b');
  assert.equal(await dropped, false);
  assert.equal(slots.held('c'), null);
  await slots.release('a');
  assert.equal(await next, true);
  assert.deepEqual({ read: slots.held('c').read, onReader: slots.held('c').onReader }, { read: false, onReader: false });
  assert.throws(() => slots.acquire('c', true), /asked for twice/);
  await slots.release('c');
  await slots.drained();
  assert.deepEqual(slots.keysStartingWith(''), []);
});

// An owner in this process: TabServer over Slots, whose statement calls
// record what they ran and answer with it.
function owner(channel) {
  const slots = new Slots({ hasReader: true, durable: async () => {} });
  const calls = [];
  const call = async (key, method, args) => {
    const slot = slots.held(key);
    if (slot == null) throw new Error(`${method} outside a lock`);
    calls.push({ key, method, args, read: slot.read });
    return { columnNames: ['sql'], rawRows: [[args[0]]], changes: 0, lastInsertRowid: 0 };
  };
  const server = new TabServer(channel, { slots, call, tabWrite: call, rollback: async () => {} });
  return { slots, calls, server };
}

test('a read of one statement is one round trip: the owner runs it and ends the lock', async () => {
  const { slots, calls, server } = owner('one-read');
  const client = new TabClient('one-read', () => {});
  const sent = [];
  const listener = new BroadcastChannel('one-read');
  listener.onmessage = ({ data }) => { if (data.from != null) sent.push(data.type); };
  try {
    const result = await client.read('SELECT 1', []);
    assert.deepEqual(result.rawRows, [['SELECT 1']]);
    assert.deepEqual(calls.map((c) => [c.method, c.read]), [['readRaw', true]]);
    await tick();
    assert.deepEqual(sent, ['acquire'], 'the client sends only the acquire');
    assert.deepEqual(slots.keysStartingWith('tab:'), [], 'the owner ended the lock');
  } finally {
    listener.close();
    client.close();
    server.close();
  }
});

test('an owner that knows no one-statement reads grants plainly, and the client sends the call and the release', async () => {
  // An owner of an earlier build: grants, answers calls, ends locks.
  const channel = new BroadcastChannel('old-owner');
  const seen = [];
  channel.onmessage = ({ data }) => {
    if (data.to !== 'owner') return;
    seen.push(data.type);
    const reply = (message) => channel.postMessage({ ...message, to: data.from, by: 'old' });
    if (data.type === 'acquire') reply({ type: 'granted', lock: data.lock });
    if (data.type === 'call') reply({ type: 'result', id: data.id, result: { columnNames: ['x'], rawRows: [[data.args[0]]], changes: 0, lastInsertRowid: 0 } });
    if (data.type === 'release') reply({ type: 'released', lock: data.lock });
  };
  const client = new TabClient('old-owner', () => {});
  try {
    const result = await client.read('SELECT 2', []);
    assert.deepEqual(result.rawRows, [['SELECT 2']]);
    await tick();
    assert.deepEqual(seen, ['acquire', 'call', 'release']);
  } finally {
    client.close();
    channel.close();
  }
});

test('a read asked of an owner that goes before granting it is asked again of the next owner', async () => {
  // The first owner never answers; a second one announces itself.
  const silent = new BroadcastChannel('next-owner');
  silent.onmessage = () => {};
  const client = new TabClient('next-owner', () => {});
  try {
    const reading = client.read('SELECT 3', []);
    await tick();
    const { calls, server } = owner('next-owner');
    try {
      const result = await reading;
      assert.deepEqual(result.rawRows, [['SELECT 3']]);
      assert.equal(calls.length, 1);
    } finally {
      server.close();
    }
  } finally {
    client.close();
    silent.close();
  }
});

test("another tab's write lock queues behind this page's, and its calls run only while it is granted", async () => {
  const { slots, calls, server } = owner('write-order');
  const client = new TabClient('write-order', () => {});
  try {
    assert.equal(await slots.acquire('page:1', false), true);
    const granted = client.acquire(false);
    await tick();
    assert.equal(slots.held(slots.keysStartingWith('tab:')[0]), null, "the tab's lock waits");
    await slots.release('page:1');
    const lock = await granted;
    await client.call(lock, 'executeRaw', ['INSERT', []]);
    await client.release(lock);
    assert.deepEqual(calls.map((c) => [c.method, c.read]), [['executeRaw', false]]);
    await assert.rejects(client.call(lock, 'executeRaw', ['INSERT', []]), /lock ended/);
  } finally {
    client.close();
    server.close();
  }
});
