"""The task classes this folder's YAMLs name (``class: !function wsc_task_classes.SchemaTask``).

lm-eval 0.4.10 and 0.4.11 take a ``!function`` from a Python file beside the YAML only (later
releases look there first, then import the dotted name), so the classes are named through this
file, which every release finds.
"""

from wsc_tasks.tasks.categorized import CategorizedSchemaTask
from wsc_tasks.tasks.contamination import ContaminationTask
from wsc_tasks.tasks.questions import QuestionTask
from wsc_tasks.tasks.schema_tasks import AssociativityTask, ConsistencyTask, SchemaTask
from wsc_tasks.tasks.winowhy import WinoWhyTask

__all__ = [
    "AssociativityTask",
    "CategorizedSchemaTask",
    "ConsistencyTask",
    "ContaminationTask",
    "QuestionTask",
    "SchemaTask",
    "WinoWhyTask",
]
