"""``wsc_tasks.task``: the task classes under the name that YAMLs of the flat layout use."""

from wsc_tasks.tasks.schema_tasks import AssociativityTask, ConsistencyTask, SchemaTask

__all__ = ["AssociativityTask", "ConsistencyTask", "SchemaTask"]
