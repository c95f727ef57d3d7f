"""Model calls: the call runner and its limits, the shared gate, fault handling, model identity and reply reading."""
