"""What every template-based backend (``sim``, ``cuda``) resolves the same way: which template a
spec names, and the target it tunes. One place, so the simulator and the real GPU can never
disagree on the space, the problem or the reference config."""

from __future__ import annotations

from typing import Any, Mapping

from workbench.backends.base import BackendSpec, Target
from workbench.core.errors import SpaceError, TemplateError, WorkbenchError
from workbench.core.domain.records import device_info
from workbench.core.domain.space import restriction_note
from workbench.core.domain.templates import DECLARATIVE_SUFFIX, KernelTemplate, kernels_dir, require_template
from workbench.core.model.checks import reference_problem
from workbench.core.model.verify import NO_REFERENCE_NOTE


def load_template_for(spec: BackendSpec) -> KernelTemplate:
    """The template ``spec.options["kernel"]`` names, from the spec's folders then the shipped library."""
    name = spec.options.get("kernel")
    if not name:
        raise WorkbenchError(f"{spec.kind} backend needs options.kernel: the template name")
    # that spec alone: another one of the folder may be half edited
    return require_template(name, *spec.options.get("kernel_dirs", ()), str(kernels_dir()))


def template_target(template: KernelTemplate, spec: BackendSpec, device: Mapping[str, Any]) -> Target:
    """The target of a template run: its space for the resolved problem, and its default config."""
    problem = template.resolve_problem(spec.options.get("problem"))
    space = template.space(problem)
    chosen = spec.options.get("problem") or {}
    where = ", ".join(f"{name}={problem[name]}" for name in chosen if name in problem) or "the default problem"
    if template.path.endswith(DECLARATIVE_SUFFIX):
        # a declarative spec's reference is checked on its small problem before the run, as
        # check-kernels checks it: found by the run's worker, it was a failed start (exit 1) where
        # a malformed file is a refusal (exit 2); a Python spec's reference is its own code, run
        # only in a worker
        wrong = reference_problem(template)
        if wrong is not None:
            raise WorkbenchError(f"{template.name}: {wrong}")
    notes: tuple[str, ...] = ()
    try:
        default = space.config(template.default) if template.default else space.default_config()
    except SpaceError as exc:  # a restriction reads a problem parameter: the default does not fit this size
        if not chosen:  # at the spec's own problem: the spec is wrong, whatever is run
            raise WorkbenchError(f"{template.name}: the template's default config is not valid at its default "
                                 f"problem ({exc}): change the template's default") from None
        if space.count() == 0:  # nothing to search: said as that, not as the default's fault
            # (a restriction whose arithmetic fails at this size, 1 // (n - 1024), is named with why)
            why = "".join(f"; {restriction_note(*found)}" for found in space.uncomputable())
            raise WorkbenchError(f"{template.name}: no config is valid at {where} (the template's default: {exc})"
                                 f"{why}; choose sizes the template's restrictions allow") from None
        # the other configs of this size are still worth tuning: it is searched without a point of
        # comparison (a stand-in called "the default" would be compared with as if it were one)
        default = None
        notes = (f"{template.name}: the template's default config is not valid at {where} ({exc}); that size "
                 "is searched without it, so none of its results is compared with the default",)
    try:  # the spec's launch was checked at its own problems only: a fractional grid at this size is refused now
        if default is not None:
            template.grid(problem, default)
            template.block(problem, default)
    except TemplateError as exc:
        raise WorkbenchError(f"{template.name}: at {where}, the default config's {exc}: choose sizes it divides, or "
                             "change the template's launch") from None
    for arg in template.args:  # checked at the spec's own problems only, as the launch was
        if arg.kind == "scalar" or arg.shape is None:
            continue
        try:
            shape = tuple(arg.shape(problem))
        except (ArithmeticError, ValueError, WorkbenchError) as exc:
            raise WorkbenchError(f"{template.name}: at {where}, argument {arg.name}'s shape cannot be computed "
                                 f"({exc}): choose other sizes") from None
        if any(dim < 0 for dim in shape):
            raise WorkbenchError(f"{template.name}: at {where}, argument {arg.name} would have shape {shape}: "
                                 "choose sizes its shape allows (a minimum in the spec's problem says which)")
    # what check-kernels refuses a template for, said when it runs: the simulator launches nothing,
    # so a run of a spec whose arguments do not match its kernel's parameters found a "best
    # config" that no GPU could launch, without a word
    notes += tuple(f"{template.name}: {message}; every launch on a GPU would fail, and the simulator runs no kernel "
                   "to find it" for severity, message in template.signature_problems() if severity == "error")
    return Target(
        kernel=template.name,
        kind="template",
        space=space,
        problem=problem,
        source_hash=template.source_hash(),
        earlier_hashes=template.earlier_hashes(),
        profile_changed_hashes=template.profile_changed_hashes(),
        device=device_info(device),
        default_config=default,
        description=template.description,
        reference=reference_note(template, spec.kind),
        notes=notes,
    )


def reference_note(template: KernelTemplate, backend: str) -> str:
    """What a run says about its checks when the template has no reference ("" when it has one)."""
    if template.has_reference:
        return ""
    if backend == "sim" and template.emulate is None:
        return ("no reference given, and the simulator checks no outputs of this kernel (it has no emulation); "
                "on a GPU the first valid config's outputs are the reference for the others")
    return NO_REFERENCE_NOTE
