"""The old, private name of `distribute.tf_config`.

Kept only for the modules of this package that still import it (launch,
strategy, _multiworker); new code imports `distribute.tf_config`.
"""

from distribute.tf_config import TIMEOUT_ENV
from distribute.tf_config import coordinated_jobs
from distribute.tf_config import make
from distribute.tf_config import read
from distribute.tf_config import task_count

__all__ = ['read', 'task_count', 'coordinated_jobs', 'make', 'TIMEOUT_ENV']
