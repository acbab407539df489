export { ChartrAgentRecords } from "./agent-records.js";
export {
  type AgentRegistration,
  ChartrAgentTimelineStore,
  type ChartrAgentTimelineStoreOptions,
} from "./store.js";
export {
  ChartrAuthError,
  ChartrConflictError,
  ChartrError,
  ChartrNetworkError,
  ChartrUnknownAgentError,
} from "./errors.js";
export type * from "./paseo-types.js";
