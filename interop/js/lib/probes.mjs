// Out-of-band views the cases use to check what A2A answers cannot show:
// the agent's own counters (interop/js/lib/state.mjs, interop/goagent) and
// the webhook receiver run by the Go test.

const POLL_INTERVAL_MS = 50;

async function getJSON(url, signal) {
  const res = await fetch(url, { signal });
  if (!res.ok) {
    throw new Error(`GET ${url}: HTTP ${res.status}`);
  }
  return res.json();
}

export class Probes {
  /**
   * @param {string} agentBase the agent's own base URL (not the gateway's)
   * @param {string} webhookBase the webhook receiver's base URL
   */
  constructor(agentBase, webhookBase) {
    this.agentBase = agentBase.replace(/\/+$/, '');
    this.webhookBase = webhookBase.replace(/\/+$/, '');
  }

  /** How many times the agent ran a message with this id. */
  async executions(messageId, signal) {
    const body = await getJSON(`${this.agentBase}/interop/messages/${encodeURIComponent(messageId)}`, signal);
    return body.executions;
  }

  /** The agent's view of a task: subscriptions, webhook URLs it was given, whether it is held. */
  async task(taskId, signal) {
    return getJSON(`${this.agentBase}/interop/tasks/${encodeURIComponent(taskId)}`, signal);
  }

  /** Lets a task started with "hold" finish. */
  async release(taskId, signal) {
    const res = await fetch(`${this.agentBase}/interop/tasks/${encodeURIComponent(taskId)}/release`, { method: 'POST', signal });
    if (res.status !== 204) {
      throw new Error(`release ${taskId}: HTTP ${res.status} (the task was not held)`);
    }
  }

  /** A fresh webhook URL on the receiver, and the id to query its deliveries. */
  hook() {
    const id = crypto.randomUUID();
    return { id, url: `${this.webhookBase}/hooks/${id}` };
  }

  /**
   * Deliveries the receiver got on a hook, oldest first: [{taskId, state,
   * event, contentType, token, id, verified, signatureError, error}]
   * (interop/internal/webhook's Delivery).
   */
  async deliveries(hookId, signal) {
    const body = await getJSON(`${this.webhookBase}/deliveries/${encodeURIComponent(hookId)}`, signal);
    return body.deliveries;
  }

  /** Polls until pred(value) holds for fn()'s value, or the signal aborts. */
  async waitFor(fn, pred, signal) {
    for (;;) {
      const value = await fn();
      if (pred(value)) {
        return value;
      }
      signal.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
    }
  }
}
