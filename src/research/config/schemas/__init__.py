"""Where the parameter declarations live; importing this module registers all of them.

Our own components declare their parameters once, in a torch-free `configs.py` beside them
(e.g. `research.models.configs`), and take that declaration in their constructors. The modules
here declare what we only configure: Lightning's Trainer, callbacks and loggers, torch's
optimizers, and the entry configs' top-level keys.
"""

from importlib import import_module

DECLARATIONS = (
    "research.config.schemas.run",
    "research.config.schemas.lightning",
    "research.config.schemas.optim",
    "research.models.configs",
    "research.tasks.configs",
    "research.losses.configs",
    "research.optim.configs",
    "research.data.configs",
    "research.retrieval.configs",
    "research.progress.configs",
    "research.monitoring.configs",
)

for _name in DECLARATIONS:
    import_module(_name)
