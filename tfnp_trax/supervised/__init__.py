"""supervised: training loops, tasks, checkpoints and learning-rate schedules."""

__all__ = []
