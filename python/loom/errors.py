"""Exceptions of the loom package."""


class LoomError(Exception):
    """The `loom` binary refused or could not do what was asked.

    `exit_code` is the binary's (2: bad usage or configuration, nothing was started; 1: the
    cluster could not be reached or the job could not be started), `argv` the command line, and
    the message is what the binary printed on stderr, without its `loom: ` prefix.
    """

    def __init__(self, message, exit_code=None, argv=None):
        super().__init__(message)
        self.exit_code = exit_code
        self.argv = list(argv) if argv else []


class JobFailedError(LoomError):
    """A job run by `loom.run()` ended FAILED or KILLED.

    `job` is its `Job`, `status` its final `JobStatus`, `task` the task that failed first
    ("worker:1", or None when the job was killed or failed as a whole) and `stderr_tail` that
    task's last stderr lines (a list of str); the message has all of it.
    """

    def __init__(self, message, job=None, status=None, task=None, stderr_tail=None):
        super().__init__(message, exit_code=1)
        self.job = job
        self.status = status
        self.task = task
        self.stderr_tail = list(stderr_tail or [])
