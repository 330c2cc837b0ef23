package kubeapplier

// HeartbeatID is the documentID of the heartbeat document in the ApplyDesire status table.
const HeartbeatID = "_heartbeat"
