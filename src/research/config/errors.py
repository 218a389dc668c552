"""The one exception type a user's config mistake becomes."""


class ConfigError(ValueError):
    """A config value or override a user got wrong; its message is a single line. `prog` names
    the part that refuses it where that is not the command itself (`hparams_search`)."""

    def __init__(self, message: str, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


def innermost(err: BaseException) -> BaseException:
    """The error Hydra's instantiate wrapped, if it wrapped one."""
    from hydra.errors import InstantiationException

    while isinstance(err, InstantiationException) and err.__cause__ is not None:
        err = err.__cause__
    return err


def yaml_problem(err: BaseException) -> str | None:
    """`<file>:<line>:<column>: <the parser's problem>` for a YAML syntax error in `err` or in
    what it wraps (PyYAML's own message spans several lines, with the text around the mark)."""
    import yaml

    seen: BaseException | None = err
    while seen is not None and not isinstance(seen, yaml.MarkedYAMLError):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return None
    mark = seen.problem_mark or seen.context_mark
    where = f"{mark.name}:{mark.line + 1}:{mark.column + 1}" if mark else "a YAML file"
    problem = seen.problem or seen.context or "invalid YAML"
    opened = seen.context_mark if seen.problem and seen.context else None
    if opened is not None and opened is not mark:
        problem += f" ({seen.context} at {opened.line + 1}:{opened.column + 1})"
    return f"{where}: YAML syntax error: {problem}; fix the file at that line"


def resolver_refusal(err: BaseException) -> str | None:
    """The line of a ConfigError that one of our resolvers raised (`checkpoint_mode`), which
    OmegaConf wraps in InterpolationResolutionErrors of its own ('ConfigError raised while
    resolving interpolation: ...', with the interpolation around it)."""
    from omegaconf.errors import InterpolationResolutionError

    seen: BaseException | None = err
    while isinstance(seen, InterpolationResolutionError):
        seen = seen.__cause__ or seen.__context__
    return str(seen) if isinstance(seen, ConfigError) and seen is not err else None


def one_line(err: BaseException) -> str:
    """The first meaningful line of an error, plus the config key OmegaConf names, if any; a
    YAML syntax error as its file, line, column and problem; a resolver's refusal as it said it."""
    found = yaml_problem(err) or resolver_refusal(err)
    if found:
        return found
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    head = lines[0] if lines else type(err).__name__
    full_key = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("full_key:")), "")
    return f"{head} (key: {full_key})" if full_key and full_key not in head else head
