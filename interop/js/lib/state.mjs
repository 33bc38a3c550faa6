// What the interop cases need to observe inside the agent, out of band of
// A2A: how often a message was executed (dedupe), which webhook URLs the
// agent was given (push relay), how many event subscriptions a task has
// had (resubscribe), and the held tasks a case may release.

import { DefaultExecutionEventBusManager, InMemoryPushNotificationStore } from '@a2a-js/sdk/server';

const MAX_ENTRIES = 10000;

// BoundedMap forgets its oldest entries, so a long-running agent cannot grow
// without bound.
class BoundedMap extends Map {
  set(key, value) {
    if (!this.has(key) && this.size >= MAX_ENTRIES) {
      this.delete(this.keys().next().value);
    }
    return super.set(key, value);
  }
}

export class AgentState {
  executions = new BoundedMap();
  subscriptions = new BoundedMap();
  pushUrls = new BoundedMap();
  contexts = new BoundedMap();
  holds = new BoundedMap();

  countExecution(messageId) {
    this.executions.set(messageId, (this.executions.get(messageId) ?? 0) + 1);
  }

  countSubscription(taskId) {
    this.subscriptions.set(taskId, (this.subscriptions.get(taskId) ?? 0) + 1);
  }

  recordPushUrl(taskId, url) {
    const urls = this.pushUrls.get(taskId) ?? [];
    if (!urls.includes(url)) {
      urls.push(url);
    }
    this.pushUrls.set(taskId, urls);
  }

  remember(taskId, contextId) {
    this.contexts.set(taskId, contextId);
  }

  contextOf(taskId) {
    return this.contexts.get(taskId) ?? '';
  }

  /** Returns a promise settled with 'released' or 'canceled'. */
  hold(taskId) {
    return new Promise((resolve) => this.holds.set(taskId, resolve));
  }

  release(taskId) {
    return this.settle(taskId, 'released');
  }

  cancel(taskId) {
    return this.settle(taskId, 'canceled');
  }

  settle(taskId, outcome) {
    const resolve = this.holds.get(taskId);
    if (!resolve) {
      return false;
    }
    this.holds.delete(taskId);
    resolve(outcome);
    return true;
  }

  /** Mounts the probe under /interop on an Express app. */
  mount(app) {
    app.get('/interop/messages/:messageId', (req, res) => {
      res.json({ executions: this.executions.get(req.params.messageId) ?? 0 });
    });
    app.get('/interop/tasks/:taskId', (req, res) => {
      const id = req.params.taskId;
      res.json({
        subscriptions: this.subscriptions.get(id) ?? 0,
        pushUrls: this.pushUrls.get(id) ?? [],
        held: this.holds.has(id),
      });
    });
    app.post('/interop/tasks/:taskId/release', (req, res) => {
      res.status(this.release(req.params.taskId) ? 204 : 404).end();
    });
  }
}

// Counts every attachment to a task's event bus: the sending request's own
// and each resubscription.
export class CountingBusManager extends DefaultExecutionEventBusManager {
  constructor(state) {
    super();
    this.state = state;
  }

  createOrGetByTaskId(taskId, context) {
    this.state.countSubscription(taskId);
    return super.createOrGetByTaskId(taskId, context);
  }

  getByTaskId(taskId, context) {
    const bus = super.getByTaskId(taskId, context);
    if (bus) {
      this.state.countSubscription(taskId);
    }
    return bus;
  }
}

// Records the webhook URL of every push configuration the agent is given.
export class RecordingPushStore extends InMemoryPushNotificationStore {
  constructor(state) {
    super();
    this.state = state;
  }

  async save(taskId, context, config) {
    await super.save(taskId, context, config);
    this.state.recordPushUrl(taskId, config.url);
  }
}
