"""Model calls: the call runner, fault handling, model identity, reply reading and the verdict cache."""
