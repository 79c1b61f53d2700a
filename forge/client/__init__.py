"""``forge.client``: a small, typed client of Forge's REST API, on httpx.

It acts as the user of an API token (``manage.py forge_user NAME --role ROLE --token``),
so everything it does is that user's, checked and audited as any API call. A plan it
submits is that user's to author and never theirs to approve: it runs only once another
person approved exactly that version.

```python
from forge.client import ForgeApiError, ForgeClient

with ForgeClient("http://localhost:8000", token) as forge:
    version = forge.create_plan("Release notes", source=text, format="yaml")
    version = forge.wait_for_decision(version.plan_id, version.number, timeout_s=600)
    if version.approved:
        run = forge.start_run(version.plan_id, version.number)
        for event in forge.events(run.id, after=0):
            print(event.seq, event.event_type, event.step_id)
```

``AsyncForgeClient`` is the same for async code. Failures raise ``ForgeApiError`` with
the API's ``code`` (``not_approved``, ``permission_denied``, ...) and HTTP ``status``.
"""

from forge.client.aio import AsyncForgeClient, Polled
from forge.client.errors import ForgeApiError
from forge.client.models import (
    Approval,
    Compiled,
    Diagnostic,
    Evaluation,
    Event,
    Run,
    Step,
    Version,
)
from forge.client.sync import ForgeClient

__all__ = [
    "Approval",
    "AsyncForgeClient",
    "Compiled",
    "Diagnostic",
    "Evaluation",
    "Event",
    "ForgeApiError",
    "ForgeClient",
    "Polled",
    "Run",
    "Step",
    "Version",
]
