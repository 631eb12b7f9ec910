"""Tasks: data sets as small typed records (:class:`Task`) that every model and diagnostic accepts."""

from .base import Task
from .real import cifar10_task, digits_task, load_cifar10, load_mnist, mnist_task
from .toy import binary_toy_task, class_sizes, toy_task

__all__ = ["Task", "toy_task", "binary_toy_task", "class_sizes", "digits_task", "mnist_task", "cifar10_task",
           "load_mnist", "load_cifar10"]
