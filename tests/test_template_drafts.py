"""The editor's drafts: each distinct draft in a folder of its own, never written over."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.core.errors import WorkbenchError
from workbench.core.domain.kernel_spec import SpecError
from workbench.core.domain.templates import load_templates
from workbench.core.model.template_drafts import save_draft

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "saxpy"


def _example() -> tuple[dict, str]:
    spec = json.loads((EXAMPLE / "saxpy.kernel.json").read_text())
    return spec, (EXAMPLE / spec["source"]).read_text()


def test_a_changed_draft_goes_to_a_new_folder_and_the_earlier_one_keeps_its_source(tmp_path: Path) -> None:
    """The next Tune of a name wrote over the previous draft: a session tuned from it then pointed
    at source it was not measured with, and the code it measured was gone."""
    spec, source = _example()
    first = save_draft(tmp_path, spec, source)
    first_hash = load_templates(first)["saxpy"].source_hash()
    second = save_draft(tmp_path, spec, source + "// faster, perhaps\n")
    assert second != first and second.parent == first.parent == tmp_path
    assert first.name.startswith("saxpy-") and second.name.startswith("saxpy-")
    assert load_templates(first)["saxpy"].source_hash() == first_hash  # what the first session measured
    assert (second / "saxpy.cu").read_text().endswith("// faster, perhaps\n")
    assert not (first / "saxpy.cu").read_text().endswith("// faster, perhaps\n")


def test_the_same_draft_tuned_again_reuses_its_folder_and_leaves_nothing_else(tmp_path: Path) -> None:
    spec, source = _example()
    folder = save_draft(tmp_path, spec, source)
    assert save_draft(tmp_path, dict(spec), source) == folder
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]  # no staging folder left behind
    made = tmp_path / "made"
    made.mkdir()  # as a plain folder is made under the umask in force (not mkdtemp's private 0700)
    assert folder.stat().st_mode & 0o777 == made.stat().st_mode & 0o777


def test_a_draft_that_does_not_load_writes_nothing(tmp_path: Path) -> None:
    spec, source = _example()
    with pytest.raises(SpecError):
        save_draft(tmp_path, dict(spec, restrictions=["block_size >"]), source)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["../victim", "", "_hidden"])
def test_a_name_that_is_no_template_name_is_refused_before_anything_is_made(tmp_path: Path, name: str) -> None:
    spec, source = _example()
    drafts = tmp_path / "drafts"
    with pytest.raises(WorkbenchError, match="name: must"):
        save_draft(drafts, dict(spec, name=name), source)
    assert list(tmp_path.iterdir()) == []


def test_links_in_the_drafts_folder_are_refused_and_left_alone(tmp_path: Path) -> None:
    spec, source = _example()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.kernel.json").write_text("{}")
    drafts = tmp_path / "drafts"
    drafts.symlink_to(elsewhere)
    with pytest.raises(WorkbenchError, match="a link, not the editor's drafts folder"):
        save_draft(drafts, spec, source)
    drafts.unlink()
    name = save_draft(tmp_path / "probe", spec, source).name
    drafts.mkdir()
    (drafts / name).symlink_to(elsewhere)
    with pytest.raises(WorkbenchError, match="a link, not a drafts folder of the editor's"):
        save_draft(drafts, spec, source)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious.kernel.json"]
    assert sorted(p.name for p in drafts.iterdir()) == [name]
    (drafts / name).unlink()
    (drafts / name).write_text("a file in the draft's place")
    with pytest.raises(WorkbenchError, match="not a drafts folder of the editor's"):
        save_draft(drafts, spec, source)
    assert (drafts / name).read_text() == "a file in the draft's place"


def test_a_drafts_headers_are_part_of_its_folder_and_a_header_outside_stays_where_it_is(tmp_path: Path) -> None:
    """Two drafts differing only in a header they include went into one folder, so the second
    tuned the first's header; a flat draft keeps the folder name it had before headers counted."""
    from workbench.core.model.template_drafts import folder_digest
    from workbench.core.model.template_headers import copy_headers, own_headers

    spec, source = _example()
    flat = save_draft(tmp_path / "drafts", spec, source)
    assert flat.name == f"saxpy-{folder_digest(flat)}"
    opened = tmp_path / "opened"
    (opened / "inc").mkdir(parents=True)
    (tmp_path / "shared.h").write_text("#pragma once\n")
    (opened / "inc" / "a.h").write_text('#pragma once\n#include "../../shared.h"\n#define SCALE 1\n')
    with_header = '#include "inc/a.h"\n' + source
    assert own_headers(with_header, opened) == [Path("inc/a.h")]  # ../shared.h lies outside the folder
    first = save_draft(tmp_path / "drafts", spec, with_header, headers_from=opened)
    (opened / "inc" / "a.h").write_text('#pragma once\n#include "../../shared.h"\n#define SCALE 2\n')
    second = save_draft(tmp_path / "drafts", spec, with_header, headers_from=opened)
    assert first != second and (first / "inc" / "a.h").read_text().endswith("SCALE 1\n")
    assert (second / "inc" / "a.h").read_text().endswith("SCALE 2\n") and not (second / "shared.h").exists()
    assert copy_headers(with_header, opened, opened) == []  # one folder: nothing to copy
    target = tmp_path / "target"
    (target / "inc").mkdir(parents=True)
    (target / "inc" / "a.h").symlink_to(tmp_path / "shared.h")
    with pytest.raises(WorkbenchError, match="is not a regular file"):
        copy_headers(with_header, opened, target)
    assert (target / "inc" / "a.h").is_symlink()


def test_headers_named_by_compile_options_or_through_links_are_copied_by_the_names_included(tmp_path: Path) -> None:
    """A header named by a -D macro could not be resolved (the template's options were not used),
    so Save As and Tune refused a template that compiles; a header reached through a link in the
    folder was copied under its target's name, which the copy does not include."""
    import os

    from workbench.core.model.template_headers import copy_headers, own_headers

    spec, source = _example()
    opened = tmp_path / "opened"
    (opened / "real").mkdir(parents=True)
    (opened / "h.h").write_text("#pragma once\n")
    (opened / "real" / "a.h").write_text("#pragma once\n#define FROM_A 1\n")
    (opened / "inc").symlink_to(opened / "real")
    spec = dict(spec, compile_options=['-DHDR="h.h"'])
    with_headers = '#include HDR\n#include "inc/a.h"\n' + source
    options = spec["compile_options"]
    assert own_headers(with_headers, opened, options) == [Path("h.h"), Path("inc/a.h")]
    draft = save_draft(tmp_path / "drafts", spec, with_headers, headers_from=opened)
    assert (draft / "h.h").is_file() and (draft / "inc" / "a.h").read_text().endswith("FROM_A 1\n")
    assert not (draft / "real").exists() and not (draft / "inc").is_symlink()
    # a link on the way in the destination is not followed out of it
    target, outside = tmp_path / "target", tmp_path / "outside"
    target.mkdir()
    outside.mkdir()
    (target / "inc").symlink_to(outside)
    with pytest.raises(WorkbenchError, match="is a link or a file, not a folder"):
        copy_headers(with_headers, opened, target, options)
    assert os.listdir(outside) == [] and not (target / "h.h").exists()  # checked before anything is written


def test_a_header_named_like_the_templates_own_files_is_refused_and_odd_names_are_no_traceback(tmp_path: Path) -> None:
    """A header named like the file the template is saved as (its source saxpy.cu, when the spec
    names main.cu) was copied over the saved source: the save said it worked and the template
    did not load. A NUL byte in an included name ended in a ValueError traceback."""
    from workbench.core.domain.includes import included_files

    spec, source = _example()
    opened = tmp_path / "opened"
    opened.mkdir()
    (opened / "saxpy.cu").write_text("#pragma once\n")  # a helper, named like the saved source
    spec = dict(spec, source="main.cu")
    with pytest.raises(WorkbenchError, match="includes saxpy.cu, the name of a file the template itself is saved as"):
        save_draft(tmp_path / "drafts", spec, '#include "saxpy.cu"\n' + source, headers_from=opened)
    assert not (tmp_path / "drafts").exists() or not any((tmp_path / "drafts").glob("saxpy-*"))
    (opened / "h.h").write_bytes(b'#include "x\x00y.h"\n')
    found = included_files('#include "h.h"\n', (f"--include-path={opened}",))
    assert [Path(p).name for p, _ in found] == ["h.h"]  # the odd name is the compiler's to refuse
    # an include after a comment on its line is one too
    template = load_templates(save_draft(tmp_path / "d2", _example()[0], "/* x */ #include <cuda_fp16.h>\n" + source))["saxpy"]
    assert template.include_options


def test_a_drafts_copies_are_named_with_the_files_they_came_from(tmp_path: Path) -> None:
    """A run of a draft reads copies of the person's reference and headers; its errors are to name
    their own files (the window maps them back), so the draft says which file each copy is of:
    the copies only, not the draft's own spec and source."""
    from workbench.core.model.template_drafts import draft_copies

    spec, source = _example()
    opened = tmp_path / "opened"
    (opened / "inc").mkdir(parents=True)
    (opened / "inc" / "a.h").write_text("#pragma once\n#define SCALE 1\n")
    (opened / "saxpy.cu").write_text(source)  # the opened template's own source: no copy of it
    (opened / "unused.h").write_text("#pragma once\n")  # not included: not copied
    reference = tmp_path / "my ref.py"
    reference.write_text("def reference(inputs, problem):\n    return {}\n")
    with_header = '#include "inc/a.h"\n' + source
    draft = save_draft(tmp_path / "drafts", spec, with_header, reference_file=reference, headers_from=opened)
    assert draft_copies(draft, spec, reference, opened) == {draft / "_saxpy_reference.py": reference,
                                                           draft / "inc" / "a.h": opened / "inc" / "a.h"}
    assert draft_copies(draft, spec, None, None) == {}
