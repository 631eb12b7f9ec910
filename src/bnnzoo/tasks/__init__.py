"""Tasks: data sets as small typed records (:class:`Task`) that every model and diagnostic accepts."""

from .base import Task
from .real import (cifar10_task, digits_task, load_cifar10, load_mnist, load_mnist_subset, mnist_subset_split,
                   mnist_subset_task, mnist_task)
from .toy import binary_toy_task, class_sizes, toy_task
from .hermite import hermite_task
from .attention_task import attention_task
from .planted import planted_init, planted_task
from .gated_tasks import GatedSpec, effective_dataset, routing_task, xor_task

__all__ = ["Task", "toy_task", "binary_toy_task", "class_sizes", "digits_task", "mnist_task", "cifar10_task",
           "mnist_subset_task", "load_mnist_subset", "mnist_subset_split", "load_mnist", "load_cifar10",
           "hermite_task", "attention_task", "planted_task", "planted_init", "GatedSpec", "effective_dataset", "routing_task", "xor_task"]
