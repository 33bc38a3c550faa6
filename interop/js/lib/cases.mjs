// The interop cases as run by the @a2a-js/sdk client. Each case returns a
// short description of what it saw when it passes and throws an Error when
// it fails. interop/goclient runs the same cases with the a2a-go client.

import { TaskState } from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { artifactTexts, asTask, describeEvent, eventTaskId, sendRequest, stateName, userMessage } from './a2a.mjs';

const STREAM_CHUNKS = 3;
// The push order case's size: tasks, each streaming this many chunks.
const PUSH_ORDER_TASKS = 5;
const PUSH_ORDER_CHUNKS = 10;
const MAX_LIST_PAGES = 10;

// What a consumer is sent for the push relay case's task, by the version
// it registered in: in 1.0 one StreamResponse per event, in 0.3 the full
// task after each event; from the task as the relay first finds it to its
// end.
const PUSH_RELAY = {
  '1.0': {
    contentType: 'application/a2a+json',
    events: ['task:input-required', 'status:working', 'artifact:resumed: resume push', 'status:completed'],
  },
  '0.3': {
    contentType: 'application/json',
    events: ['task:input-required', 'task:working', 'task:working [resumed: resume push]', 'task:completed [resumed: resume push]'],
  },
};

function expect(cond, msg) {
  if (!cond) {
    throw new Error(msg);
  }
}

function expectState(task, want, what) {
  const got = stateName(task.status?.state);
  expect(got === want, `${what}: task ${task.id} is ${got}, want ${want}`);
}

function expectArtifact(task, want, what) {
  const texts = artifactTexts(task);
  expect(texts.includes(want), `${what}: task ${task.id} artifacts ${JSON.stringify(texts)}, want ${JSON.stringify(want)}`);
}

function expectSequence(got, want, what) {
  expect(JSON.stringify(got) === JSON.stringify(want), `${what}: events ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

/** Runs one step of a case, naming it in the error when it fails. */
async function step(what, fn) {
  try {
    return await fn();
  } catch (err) {
    throw new Error(`${what}: ${err?.message ?? err}`, { cause: err });
  }
}

async function sendTask(client, message, signal, what) {
  return asTask(await step(what, () => client.sendMessage(sendRequest(message), { signal })), what);
}

/** Reads a stream until an event described as `until`; returns the events seen. */
async function readUntil(it, until, what) {
  const seen = [];
  for (;;) {
    const { value, done } = await it.next();
    expect(!done, `${what}: stream ended after ${JSON.stringify(seen.map((e) => describeEvent(e)))} before ${until}`);
    seen.push(value);
    if (describeEvent(value) === until) {
      return seen;
    }
  }
}

async function readRest(it) {
  const seen = [];
  for (let r = await it.next(); !r.done; r = await it.next()) {
    seen.push(r.value);
  }
  return seen;
}

/** Starts a "hold" task on a stream and reads until the agent works on it. */
async function startHeld(client, signal) {
  const it = client.sendMessageStream(sendRequest(userMessage('hold')), { signal })[Symbol.asyncIterator]();
  const seen = await step('hold stream', () => readUntil(it, 'status:working', 'hold'));
  const taskId = eventTaskId(seen[0]);
  expect(taskId !== '', `hold: the first event ${describeEvent(seen[0])} names no task`);
  return { it, taskId, seen };
}

/** Starts a task waiting for input and registers a push config for it with a fresh hook and token. */
async function inputWithHook(client, probes, signal) {
  const task = await sendTask(client, userMessage('input'), signal, 'send');
  const hook = probes.hook();
  const token = crypto.randomUUID();
  await step('create', () =>
    client.createTaskPushNotificationConfig(
      { tenant: '', id: `cfg-${hook.id}`, taskId: task.id, url: hook.url, token, authentication: undefined },
      { signal },
    ),
  );
  return { task, hook, token };
}

/**
 * Waits for the completed notification of a task with a push config, checks
 * every delivery (the task's, readable, verified against the gateway's keys,
 * with the configured token and media type) and returns the notifications in
 * the order they arrived, each once: a retry repeats its notification's id.
 */
async function notifications(probes, { task, hook, token }, contentType, signal) {
  const deliveries = await step(`webhook: no completed notification for task ${task.id}`, () =>
    probes.waitFor(
      () => probes.deliveries(hook.id, signal),
      (ds) => ds.some((d) => d.state === 'completed'),
      signal,
    ),
  );
  const got = [];
  const seen = new Set();
  deliveries.forEach((d, i) => {
    const what = `webhook: delivery ${i + 1} (${d.event})`;
    expect(!d.error, `${what} is unreadable: ${d.error}`);
    expect(d.verified, `${what}: signature not verified: ${d.signatureError}`);
    expect(d.taskId === task.id, `${what} is about task ${d.taskId}, want ${task.id}`);
    expect(d.token === token, `${what} does not carry the configured token`);
    expect(d.contentType.startsWith(contentType), `${what} has Content-Type ${d.contentType}, want ${contentType}`);
    if (!seen.has(d.id)) {
      seen.add(d.id);
      got.push(d.event);
    }
  });
  return got;
}

/**
 * Checks notifications, named as the receiver names them, against the order
 * a stream of the task shows: input-required, working, chunks 1 to n,
 * completed. Consecutive steps may come as one (a 0.3 consumer's full
 * task); nothing may repeat, go back or follow the end.
 */
function expectInOrder(events, n, what) {
  let full = '';
  for (let i = 1; i <= n; i++) {
    full += `chunk ${i}`;
  }
  const rank = { 'input-required': 0, working: 1, completed: 2 };
  let state = -1;
  let text = '';
  events.forEach((ev, i) => {
    const at = `${what}: notification ${i + 1} of ${JSON.stringify(events)}`;
    const colon = ev.indexOf(':');
    const kind = ev.slice(0, colon);
    const rest = ev.slice(colon + 1);
    let next = state;
    let nextText = text;
    if (kind === 'task') {
      const open = rest.indexOf(' [');
      next = rank[open < 0 ? rest : rest.slice(0, open)];
      nextText = open < 0 ? '' : rest.slice(open + 2).replace(/\]$/, '');
    } else if (kind === 'status') {
      next = rank[rest];
    } else if (kind === 'artifact') {
      nextText = text + rest;
    } else {
      throw new Error(`${at} is a ${kind}`);
    }
    expect(state !== rank.completed, `${at} follows the end`);
    expect(next !== undefined && next >= state, `${at}: the state went back`);
    expect(full.startsWith(nextText) && nextText.length >= text.length, `${at}: the chunks are not in order`);
    expect(next !== state || nextText !== text, `${at} repeats the one before`);
    state = next;
    text = nextText;
  });
  expect(state === rank.completed && text === full, `${what}: the task did not end completed with every chunk: ${JSON.stringify(events)}`);
}

// GRPC_NOT_FOUND is the gRPC status code NOT_FOUND.
const GRPC_NOT_FOUND = 5;

/**
 * Whether err is the TaskNotFound refusal in the pair's binding: the SDK's
 * TaskNotFoundError (over JSON-RPC the cause of the Error it throws for an
 * error event). 0.3 over gRPC defines the status code only, no ErrorInfo,
 * so there the SDK's generic gRPC error with status NOT_FOUND is it.
 */
function isTaskNotFound({ binding, version }, err) {
  if (err instanceof TaskNotFoundError || err?.cause instanceof TaskNotFoundError) {
    return true;
  }
  return binding === 'GRPC' && version === '0.3' && err?.status === GRPC_NOT_FOUND;
}

async function expectTaskNotFound(env, what, call) {
  let result;
  try {
    result = await call();
  } catch (err) {
    expect(isTaskNotFound(env, err), `${what}: want TaskNotFoundError, got ${err?.name}: ${err?.message}`);
    return;
  }
  throw new Error(`${what}: succeeded for another tenant's task: ${JSON.stringify(result)}`);
}

/**
 * Reads a stream the other tenant opened on a task not its own: it must
 * fail with TaskNotFoundError before any event. A stream that ends without
 * an error is what a refusal written as plain JSON looks like to a client.
 * Over JSON-RPC the SDK reports an error event as an Error whose cause is
 * the typed error.
 */
async function expectStreamTaskNotFound(env, what, open) {
  try {
    for await (const event of open()) {
      throw new Error(`${what}: the other tenant got an event: ${describeEvent(event)}`);
    }
  } catch (err) {
    expect(isTaskNotFound(env, err), `${what}: want TaskNotFoundError, got ${err?.name}: ${err?.message}`);
    return;
  }
  throw new Error(`${what}: the stream ended without an error and without events`);
}

export const cases = {
  async send({ client }, signal) {
    const task = await sendTask(client, userMessage('complete hello'), signal, 'send');
    expectState(task, 'completed', 'send');
    expectArtifact(task, 'echo: hello', 'send');
    return `task ${task.id} completed`;
  },

  async stream({ client }, signal) {
    const events = [];
    await step('stream', async () => {
      for await (const ev of client.sendMessageStream(sendRequest(userMessage(`stream ${STREAM_CHUNKS}`)), { signal })) {
        events.push(describeEvent(ev));
      }
    });
    const want = ['task:submitted', 'status:working'];
    for (let i = 1; i <= STREAM_CHUNKS; i++) {
      want.push(`artifact:chunk ${i}`);
    }
    want.push('status:completed');
    expectSequence(events, want, 'stream');
    return `${events.length} events in order`;
  },

  async get({ client }, signal) {
    const sent = await sendTask(client, userMessage('complete get'), signal, 'send');
    const got = await step('get', () => client.getTask({ tenant: '', id: sent.id }, { signal }));
    expect(got.id === sent.id, `get: asked for ${sent.id}, got ${got.id}`);
    expectState(got, 'completed', 'get');
    expectArtifact(got, 'echo: get', 'get');
    return `task ${got.id} completed`;
  },

  async list({ client, other }, signal) {
    const contextId = crypto.randomUUID();
    const want = [];
    for (const word of ['one', 'two']) {
      want.push((await sendTask(client, userMessage(`complete ${word}`, { contextId }), signal, 'send')).id);
    }
    // One task per page, so the gateway's page tokens are exercised too.
    const seen = [];
    let pageToken = '';
    for (let page = 0; ; page++) {
      expect(page < MAX_LIST_PAGES, `list: more than ${MAX_LIST_PAGES} pages for ${want.length} tasks`);
      const res = await step(`list page ${page + 1}`, () =>
        client.listTasks(
          { tenant: '', contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 1, pageToken, statusTimestampAfter: undefined },
          { signal },
        ),
      );
      seen.push(...res.tasks.map((t) => t.id));
      pageToken = res.nextPageToken;
      if (!pageToken) {
        break;
      }
    }
    expect(
      JSON.stringify([...seen].sort()) === JSON.stringify([...want].sort()),
      `list: context ${contextId} listed ${JSON.stringify(seen)}, want ${JSON.stringify(want)}`,
    );
    // Another tenant listing everything it may see gets none of them.
    const theirs = [];
    pageToken = '';
    for (let page = 0; ; page++) {
      expect(page < MAX_LIST_PAGES, `other tenant's list: more than ${MAX_LIST_PAGES} pages`);
      const res = await step(`other tenant's list page ${page + 1}`, () =>
        other.listTasks(
          { tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 100, pageToken, statusTimestampAfter: undefined },
          { signal },
        ),
      );
      theirs.push(...res.tasks.map((t) => t.id));
      pageToken = res.nextPageToken;
      if (!pageToken) {
        break;
      }
    }
    const leaked = theirs.filter((id) => want.includes(id));
    expect(leaked.length === 0, `other tenant's list shows ${JSON.stringify(leaked)}`);
    return `${seen.length} tasks over ${seen.length} pages; none listed for the other tenant`;
  },

  async cancel({ client }, signal) {
    const { it, taskId, seen } = await startHeld(client, signal);
    const canceled = await step('cancel', () => client.cancelTask({ tenant: '', id: taskId, metadata: undefined }, { signal }));
    expectState(canceled, 'canceled', 'cancel');
    const events = [...seen, ...(await step('stream after cancel', () => readRest(it)))].map(describeEvent);
    expect(events.at(-1) === 'status:canceled', `cancel: stream ended with ${JSON.stringify(events)}`);
    return `task ${taskId} canceled; stream ended canceled`;
  },

  async resubscribe({ client, probes, version }, signal) {
    const drop = new AbortController();
    const { it, taskId } = await startHeld(client, AbortSignal.any([signal, drop.signal]));
    const before = (await step('probe', () => probes.task(taskId, signal))).subscriptions;
    drop.abort();
    await it.return().catch(() => {});

    const sub = client.resubscribeTask({ tenant: '', id: taskId }, { signal })[Symbol.asyncIterator]();
    const first = sub.next(); // sends the request
    first.catch(() => {}); // awaited below; keeps an early failure from going unhandled
    // Release the task only once the agent has attached the new subscriber,
    // so no event can fall between the two streams.
    await step('waiting for the agent to attach the subscriber', () =>
      probes.waitFor(
        () => probes.task(taskId, signal),
        (t) => t.subscriptions > before,
        signal,
      ),
    );
    await step('release', () => probes.release(taskId, signal));
    const events = [];
    await step('resubscribed stream', async () => {
      for (let r = await first; !r.done; r = await sub.next()) {
        events.push(describeEvent(r.value));
      }
    });
    if (version === '1.0') {
      // 1.0: "the first event MUST be the current Task".
      expect(events[0] === 'task:working', `resubscribe: first event ${events[0]}, want task:working`);
    }
    expect(events.includes('artifact:released'), `resubscribe: events ${JSON.stringify(events)} lack the artifact`);
    expect(events.at(-1) === 'status:completed', `resubscribe: events ${JSON.stringify(events)} do not end completed`);
    return `resubscribed after a dropped stream: ${events.join(', ')}`;
  },

  async input_required({ client }, signal) {
    const first = await sendTask(client, userMessage('input'), signal, 'send');
    expectState(first, 'input-required', 'send');
    const second = await sendTask(
      client,
      userMessage('resume now', { taskId: first.id, contextId: first.contextId }),
      signal,
      'resume',
    );
    expect(second.id === first.id, `resume: answered task ${second.id}, want ${first.id}`);
    expectState(second, 'completed', 'resume');
    expectArtifact(second, 'resumed: resume now', 'resume');
    return `task ${first.id} input-required, then completed`;
  },

  async push_config({ client, probes }, signal) {
    const task = await sendTask(client, userMessage('input'), signal, 'send');
    const hook = probes.hook();
    const created = await step('create', () =>
      client.createTaskPushNotificationConfig(
        { tenant: '', id: `cfg-${hook.id}`, taskId: task.id, url: hook.url, token: crypto.randomUUID(), authentication: undefined },
        { signal },
      ),
    );
    expect(created.url === hook.url && created.id !== '', `create: answered ${JSON.stringify(created)}`);
    const got = await step('get', () => client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id }, { signal }));
    expect(got.id === created.id && got.url === hook.url, `get: answered ${JSON.stringify(got)}`);
    const list = async (what) =>
      (
        await step(what, () => client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }, { signal }))
      ).configs.map((c) => c.id);
    const listed = await list('list');
    expect(listed.includes(created.id), `list: ${JSON.stringify(listed)} lacks ${created.id}`);
    await step('delete', () => client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id }, { signal }));
    const after = await list('list after delete');
    expect(!after.includes(created.id), `list after delete: ${JSON.stringify(after)} still has ${created.id}`);
    return `config ${created.id} created, read, listed and deleted`;
  },

  // Registers a webhook for a task waiting for input, resumes the task,
  // and checks that the receiver got every event in order through to the
  // end, each signed by the gateway and carrying the configured token, and
  // that the agent was never given the consumer's URL (the agent's probe
  // lists the push URLs it was given).
  async push_relay({ client, probes, version }, signal) {
    const want = PUSH_RELAY[version];
    const { task, hook, token } = await inputWithHook(client, probes, signal);
    // The relay's first notification is the task as the relay finds it when
    // it starts following the task; resuming only then makes what the
    // receiver gets independent of how soon that is.
    await step(`webhook: no notification for task ${task.id}`, () =>
      probes.waitFor(() => probes.deliveries(hook.id, signal), (ds) => ds.length > 0, signal),
    );
    const done = await sendTask(client, userMessage('resume push', { taskId: task.id, contextId: task.contextId }), signal, 'resume');
    expectState(done, 'completed', 'resume');
    const got = await notifications(probes, { task, hook, token }, want.contentType, signal);
    expectSequence(got, want.events, 'webhook: notifications');
    const given = (await step('probe', () => probes.task(task.id, signal))).pushUrls;
    expect(!given.includes(hook.url), `the agent was given the consumer's webhook URL (it holds ${JSON.stringify(given)})`);
    return `${got.length} notifications in order, signed by the gateway; the agent was given only ${JSON.stringify(given)}`;
  },

  // Registers a webhook for each of a few tasks waiting for input, and once
  // the relay follows them (its first notification), lets each stream its
  // chunks: the agent pushes them to the gateway while the gateway reads the
  // task. Every consumer gets its task's chunks in order, each once, the
  // state never going back, and the end last.
  async push_order({ client, probes, version }, signal) {
    const want = PUSH_RELAY[version];
    const all = [];
    for (let i = 0; i < PUSH_ORDER_TASKS; i++) {
      all.push(await inputWithHook(client, probes, signal));
    }
    for (const { task, hook } of all) {
      await step(`webhook: no notification for task ${task.id}`, () =>
        probes.waitFor(() => probes.deliveries(hook.id, signal), (ds) => ds.length > 0, signal),
      );
    }
    for (const { task } of all) {
      const message = userMessage(`stream ${PUSH_ORDER_CHUNKS}`, { taskId: task.id, contextId: task.contextId });
      expectState(await sendTask(client, message, signal, 'resume'), 'completed', 'resume');
    }
    let n = 0;
    for (const followed of all) {
      const { task } = followed;
      const got = await notifications(probes, followed, want.contentType, signal);
      expectInOrder(got, PUSH_ORDER_CHUNKS, `webhook: task ${task.id}`);
      n += got.length;
    }
    return `${PUSH_ORDER_TASKS} tasks of ${PUSH_ORDER_CHUNKS} chunks, ${n} notifications, each task's in order`;
  },

  async tenant_isolation(env, signal) {
    const { client, other } = env;
    const task = await sendTask(client, userMessage('complete mine'), signal, 'send');
    await expectTaskNotFound(env, 'getTask', () => other.getTask({ tenant: '', id: task.id }, { signal }));
    await expectTaskNotFound(env, 'cancelTask', () => other.cancelTask({ tenant: '', id: task.id, metadata: undefined }, { signal }));
    const own = await step('getTask by the owner', () => client.getTask({ tenant: '', id: task.id }, { signal }));
    expect(own.id === task.id, `getTask by the owner answered ${own.id}`);
    return `the other tenant gets TaskNotFoundError for task ${task.id}`;
  },

  async refused_stream(env, signal) {
    const { client, other } = env;
    const task = await sendTask(client, userMessage('complete mine'), signal, 'send');
    const theirs = userMessage('complete theirs', { taskId: task.id, contextId: task.contextId });
    await expectStreamTaskNotFound(env, 'sendMessageStream', () => other.sendMessageStream(sendRequest(theirs), { signal }));
    return `the other tenant's stream on task ${task.id} fails with TaskNotFoundError`;
  },

  async refused_resubscribe(env, signal) {
    const { client, other } = env;
    const task = await sendTask(client, userMessage('complete mine'), signal, 'send');
    await expectStreamTaskNotFound(env, 'resubscribeTask', () => other.resubscribeTask({ tenant: '', id: task.id }, { signal }));
    return `the other tenant's resubscription to task ${task.id} fails with TaskNotFoundError`;
  },

  async dedupe({ client, probes }, signal) {
    const message = userMessage('complete once');
    const first = await sendTask(client, structuredClone(message), signal, 'send');
    const retry = await sendTask(client, structuredClone(message), signal, 'retry');
    expect(retry.id === first.id, `retry: answered task ${retry.id}, first send ${first.id}`);
    const runs = await step('probe', () => probes.executions(message.messageId, signal));
    expect(runs === 1, `the agent ran message ${message.messageId} ${runs} times`);
    return `one task (${first.id}) and one execution for two sends`;
  },
};
