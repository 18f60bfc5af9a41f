"""Recording and healing the login form through the public API, on any cache_dir (a folder
or an s3:// URL): shared by the crash tests and the process they kill."""

from __future__ import annotations

from askcache import (
    ActResult,
    Agent,
    CacheExecutionSettings,
    CacheWritingSettings,
    CachingSettings,
    ComputerTool,
)
from askcache.testing import FormFillingScript, MessagesApiStandIn, SimulatedFormApp
from askcache.testing.simulated import Layout


def heal_run(
    cache_dir: str, layout: Layout, user: str, strategy: str = "auto", search_radius: int = 320
) -> ActResult:
    """Log in as ``user`` on the form drawn with ``layout``, replaying (or, with
    ``strategy="record"``, recording) ``login.json``; the scripted model fills the form
    whenever the replay hands back (``search_radius``: the replay's, 0 for no search)."""
    app = SimulatedFormApp(layout=layout)
    with MessagesApiStandIn(FormFillingScript(app, user)) as api:
        result = Agent(api.client(), [ComputerTool(app)]).act(
            f"Log in as {user}",
            CachingSettings(
                strategy=strategy,  # type: ignore[arg-type]
                cache_dir=cache_dir,
                writing_settings=CacheWritingSettings(
                    filename="login.json", parameters={"user": user}
                ),
                execution_settings=CacheExecutionSettings(
                    parameter_values={"user": user},
                    settle_quiet_period=0.2,
                    settle_timeout=1,
                    search_radius=search_radius,
                ),
            ),
        )
    assert app.saved == [{"name": user, "email": ""}]
    return result
