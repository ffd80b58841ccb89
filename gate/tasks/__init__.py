"""Tasks: each family prepares a public and a hidden view of its data.

Adding a task family is one entry here plus its module; adding a task of an existing family is
one YAML file under conf/task/.
"""

from __future__ import annotations

from gate.registry import Registry
from gate.tasks.base import Task, TaskViews

TASKS: Registry[type[Task]] = Registry("task family")
TASKS.register("seg_phantom", "gate.tasks.seg_phantom:SegPhantomTask")

__all__ = ["TASKS", "Task", "TaskViews"]
