"""The domain's exceptions. The API maps each class to one HTTP status in one place.

EonyxError
├── NotFound          the thing does not exist, or belongs to someone else (404)
├── InvalidInput      the caller asked for something malformed or impossible (400)
├── Unauthorized      no valid credentials (401)
├── Forbidden         valid credentials, not allowed (403)
├── Conflict          the request clashes with the current state (409)
├── Gone              the thing existed and is used up or expired for good (410)
├── TooLarge          the input can never be served, however it is retried (413)
├── TooManyRequests   too many attempts: wait `retry_after` seconds (429)
├── QuotaExceeded     a write past the user's storage quota (507; 413 if it never fits)
├── StorageError      the disk refused a write; nothing past it was done (503)
└── Unavailable       a service Eonyx needs (Redis, the job queue) cannot be reached (503)
"""


class EonyxError(Exception):
    """`param` names the request field at fault, where there is one (OpenAI's errors say)."""

    code = "error"
    details: dict[str, object] | None = None  # figures the error body carries, if any

    def __init__(self, message: str, *, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code:
            self.code = code


class NotFound(EonyxError):
    code = "not_found"


class InvalidInput(EonyxError):
    code = "invalid_input"


class Unauthorized(EonyxError):
    code = "unauthorized"


class Forbidden(EonyxError):
    code = "forbidden"


class Conflict(EonyxError):
    code = "conflict"


class Gone(EonyxError):
    code = "gone"


class TooLarge(EonyxError):
    code = "too_large"


class TooManyRequests(EonyxError):
    code = "too_many_requests"

    def __init__(self, message: str, *, retry_after: int, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after


class QuotaExceeded(EonyxError):
    """A write would take the user past their storage quota: nothing was written."""

    code = "quota_exceeded"

    def __init__(self, message: str, *, used: int, quota: int, request: int) -> None:
        super().__init__(message)
        self.never_fits = request > quota  # this request alone is larger than the quota
        self.details = {"used_bytes": used, "quota_bytes": quota, "request_bytes": request}


class StorageError(EonyxError):
    code = "storage_error"


class Unavailable(EonyxError):
    code = "unavailable"
