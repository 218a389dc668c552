"""Tasks: the LightningModules that train a network (from `research.models`) on a task.

Named apart from `models/` because "module" already means `nn.Module`: a task holds the
training logic (loss, metrics, optimizer wiring); the network knows nothing of Lightning.
"""
