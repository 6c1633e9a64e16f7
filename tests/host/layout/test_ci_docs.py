"""The CI jobs users copy (docs/ci/, shown in docs/ci.md): each passes its
platform's own linter (actionlint with shellcheck for the GitHub Actions
workflow, GitLab's published CI schema through check-jsonschema for the
GitLab job, shellcheck for its script), each linter rejects a broken copy
(so no check passes vacuously), docs/ci.md quotes the files verbatim, and
the jobs use the tool's real options, the Makefile's real targets, and
publish the JUnit file the run writes.

The linters come from `make deps` (build/lint-venv, pinned in
scripts/install-deps.sh; shellcheck from Debian): a missing one FAILS these
tests, it never skips them."""

import argparse
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from clockbench.machines import qemu
from clockbench.runs import plan
from clockbench.cli import runner
from helpers.paths import ROOT

DOC = ROOT / "docs" / "ci.md"
GITHUB = ROOT / "docs" / "ci" / "github-actions.yml"
GITLAB = ROOT / "docs" / "ci" / "gitlab-ci.yml"
RELEASE = ROOT / "docs" / "ci" / "github-release.yml"
LINT_BIN = ROOT / "build" / "lint-venv" / "bin"


def tool(name: str) -> str:
    """A linter's path: build/lint-venv's, else (shellcheck) the PATH's. Missing: a failure saying how to get it."""
    path = LINT_BIN / name
    if path.is_file():
        return str(path)
    found = shutil.which(name) if name == "shellcheck" else None
    if not found:
        pytest.fail(f"{name} not found ({path}{' or on PATH' if name == 'shellcheck' else ''}): run `make deps`, "
                    "which installs the CI jobs' linters")
    return found


def lint(cmd: list[str], text: str, tmp_path: Path, name: str) -> subprocess.CompletedProcess:
    """Runs a linter on `text`, written to tmp_path/name (actionlint needs a .yml name)."""
    f = tmp_path / name
    f.write_text(text)
    return subprocess.run(cmd + [str(f)], capture_output=True, text=True, timeout=120)


def actionlint(text: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return lint([tool("actionlint"), "-no-color", f"-shellcheck={tool('shellcheck')}"], text, tmp_path, "workflow.yml")


def gitlab_schema(text: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return lint([tool("check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci"], text, tmp_path, "gitlab-ci.yml")


def gitlab_script(text: str) -> str:
    """The GitLab job's script as its runner's bash runs it: every
    before_script and script line in one shell. The job's variables come
    from the environment, where a pipeline may set them to anything: left
    unassigned here, so that shellcheck judges them as such."""
    job = yaml.safe_load(text)["clockbench"]
    assert all(k.isupper() for k in job.get("variables", {})), "shellcheck takes only upper-case names for the environment's"
    lines = ["#!/usr/bin/env bash", "set -eo pipefail"]
    return "\n".join(lines + job.get("before_script", []) + job["script"]) + "\n"


def shellcheck(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([tool("shellcheck"), "-s", "bash", "-"], input=script, capture_output=True, text=True, timeout=120)


def broken(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, f"the breakage's anchor {old!r} is no longer in the file: update the test"
    return text.replace(old, new, 1)


def test_a_missing_linter_fails_the_test_and_says_how_to_get_it():
    with pytest.raises(pytest.fail.Exception, match=r"make deps"):
        tool("no-such-linter")


# --- GitHub Actions: actionlint (with shellcheck on every run: step) ---

@pytest.mark.parametrize("path", [GITHUB, RELEASE], ids=["run", "release"])
def test_the_workflow_passes_actionlint(tmp_path, path):
    r = actionlint(path.read_text(), tmp_path)
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout + r.stderr


@pytest.mark.parametrize("old,new,rule", [
    ("runs-on: ubuntu-24.04", "runs_on: ubuntu-24.04", "syntax-check"),  # a key GitHub does not know
    ("${{ secrets.CLOCKBENCH_RELEASE_KEY }}", "${{ secret.CLOCKBENCH_RELEASE_KEY }}", "expression"),  # no such context
    ('--notes-file build/release/RELEASE-NOTES.md build/release/*', '--notes-file $NOTES build/release/*', "shellcheck"),  # SC2086
])
def test_actionlint_rejects_a_broken_release_workflow(tmp_path, old, new, rule):
    r = actionlint(broken(RELEASE.read_text(), old, new), tmp_path)
    assert r.returncode != 0 and f"[{rule}]" in r.stdout, r.stdout + r.stderr


def test_the_release_workflow_uses_the_makefiles_release_targets():
    """What the release job types exists: the targets (in `make help`, which
    lists every phony target) and the variables their recipes read."""
    text = RELEASE.read_text()
    assert 'make release KEY_DIR="$RUNNER_TEMP/release-key" VERSION="${GITHUB_REF_NAME#v}"' in text
    assert "persist-credentials: false" in text
    assert 'make rebuild-check RELEASE="$GITHUB_WORKSPACE/build/release"' in text
    assert "make deps DEPS=release" in text
    helped = subprocess.run(["make", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    assert "make release KEY_DIR=DIR" in helped and "make rebuild-check RELEASE=DIR" in helped
    makefile = (ROOT / "Makefile").read_text()
    assert "--key-dir '$(KEY_DIR)'" in makefile and "--release '$(RELEASE)'" in makefile


@pytest.mark.parametrize("old,new,rule", [
    ("runs-on: ubuntu-24.04", "runs-onn: ubuntu-24.04", "syntax-check"),  # a key GitHub does not know
    ("if-no-files-found: warn", "if-no-file-found: warn", "action"),  # an input upload-artifact does not have
    ("comment_mode: \"off\"", "comment_mod: \"off\"", "action"),  # nor the JUnit reporter
    ("${{ inputs.image_url }}", "${{ inputs.image_uri }}", "expression"),  # an input the workflow does not define
    ('cat "$OUT/summary.md"', "cat $OUT/summary.md", "shellcheck"),  # unquoted: shellcheck's SC2086
])
def test_actionlint_rejects_a_broken_workflow(tmp_path, old, new, rule):
    r = actionlint(broken(GITHUB.read_text(), old, new), tmp_path)
    assert r.returncode != 0 and f"[{rule}]" in r.stdout, r.stdout + r.stderr


# --- GitLab CI: GitLab's published schema, and shellcheck on the script ---

def test_the_gitlab_job_passes_gitlabs_schema(tmp_path):
    r = gitlab_schema(GITLAB.read_text(), tmp_path)
    assert r.returncode == 0 and "ok -- validation done" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("old,new", [
    ("  script:", "  scirpt:"),  # a key a job cannot have
    ("when: always", "when: sometimes"),  # not one of on_success, on_failure, always
    ("      junit: build/ci/junit.xml", "      junitt: build/ci/junit.xml"),  # no such report
    ("  timeout: 1h", "  timeout: [1h]"),  # a duration is a string
])
def test_gitlabs_schema_rejects_a_broken_job(tmp_path, old, new):
    r = gitlab_schema(broken(GITLAB.read_text(), old, new), tmp_path)
    assert r.returncode != 0 and "Schema validation errors" in r.stdout, r.stdout + r.stderr


def test_the_gitlab_script_passes_shellcheck():
    r = shellcheck(gitlab_script(GITLAB.read_text()))
    assert r.returncode == 0, r.stdout + r.stderr


def test_shellcheck_rejects_a_broken_gitlab_script():
    r = shellcheck(gitlab_script(broken(GITLAB.read_text(), '--profile "$PROFILE"', "--profile $PROFILE")))
    assert r.returncode != 0 and "SC2086" in r.stdout, r.stdout + r.stderr


# --- docs/ci.md quotes what users copy ---

def quotes(doc: str) -> dict[str, str]:
    """Each ```yaml block of docs/ci.md, by the docs/ci/ file the nearest
    link above it names."""
    found = {}
    for m in re.finditer(r"^```yaml\n(.*?)^```$", doc, re.S | re.M):
        links = re.findall(r"\]\((ci/[\w.-]+\.yml)\)", doc[:m.start()])
        assert links, f"a yaml block of docs/ci.md with no link to its file above it: {m.group(1)[:80]!r}"
        assert links[-1] not in found, f"docs/ci.md quotes {links[-1]} twice"
        found[links[-1]] = m.group(1)
    return found


def test_ci_md_quotes_each_job_verbatim():
    found = quotes(DOC.read_text())
    files = {f"ci/{p.name}": p.read_text() for p in sorted((ROOT / "docs" / "ci").glob("*.yml"))}
    assert set(found) == set(files), f"quoted {sorted(found)}, files {sorted(files)}"
    for name, text in files.items():
        assert found[name] == text, f"docs/ci.md's copy of docs/{name} differs from the file"


def test_readme_links_the_ci_page():
    assert "(docs/ci.md)" in (ROOT / "README.md").read_text()


# --- the jobs use what exists ---

def run_commands(text: str) -> list[list[str]]:
    """The `clockbench run` command lines of a job, its continuation lines joined, as words."""
    joined = re.sub(r"\\\n\s*", "", text)
    return [shlex.split(line.split("||")[0].strip()) for line in joined.splitlines() if "bin/clockbench run" in line]


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="clockbench")
    return runner.add_parser(p.add_subparsers(dest="command"))


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_the_run_command_parses_with_every_value_the_job_gives_it(path):
    text = path.read_text()
    cmds = run_commands(text)
    assert len(cmds) == 1 and cmds[0][:2] == ["build/venv/bin/clockbench", "run"], cmds
    # "$@": the options set just above the command, for each image
    sets = re.findall(r"set -- (--boot iso --iso \"\$IMAGE\"); else set -- (--boot direct --kernel \"\$IMAGE\")", text)
    assert len(sets) == 1, "the job no longer sets the image's options with set --: update the test"
    accels = set(re.findall(r"ACCEL=(\w+)", text))
    assert accels == {"kvm", "tcg"}, accels
    data = yaml.safe_load(text)
    if path == GITLAB:
        profiles = {data["clockbench"]["variables"]["PROFILE"]}
    else:  # YAML 1.1 reads the key `on` as true
        profiles = set(data.get("on", data.get(True))["workflow_dispatch"]["inputs"]["profile"]["options"])
    assert profiles <= set(plan.PROFILES)
    for image_args in sets[0]:
        for accel in accels:
            for profile in profiles:
                words = []
                for w in cmds[0][2:]:
                    words += shlex.split(image_args) if w == "$@" else [w]
                words = [w.replace("$IMAGE", "build/clockbench.iso").replace("$ACCEL", accel).replace("$PROFILE", profile)
                         .replace("$OUT", "build/ci") for w in words]
                assert not [w for w in words if "$" in w], words
                args = run_parser().parse_args(words)  # an unknown option or value exits
                assert (args.accel, args.profile, args.junit) == (accel, profile, "build/ci/junit.xml")


def test_both_jobs_run_the_same_command():
    assert run_commands(GITHUB.read_text()) == run_commands(GITLAB.read_text())


@pytest.mark.parametrize("target", ["deps DEPS=run", "iso", "build/venv/bin/clockbench"])
def test_the_make_targets_exist(target):
    for path in (GITHUB, GITLAB):
        assert f"make {target}" in path.read_text(), f"{path.name} no longer runs `make {target}`: update the test"
    r = subprocess.run(["make", "-n", "--no-print-directory", *target.split()], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    if target.startswith("deps"):
        assert "scripts/install-deps.sh run" in r.stdout, r.stdout


def test_install_deps_refuses_a_mode_it_does_not_know():
    r = subprocess.run([str(ROOT / "scripts" / "install-deps.sh"), "everything"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 64 and "usage:" in r.stderr, r.stdout + r.stderr


def test_both_jobs_publish_the_junit_file_the_run_writes():
    gh = yaml.safe_load(GITHUB.read_text())
    job = gh["jobs"]["clockbench"]
    assert '--junit "$OUT/junit.xml"' in GITHUB.read_text()
    reporter = [s for s in job["steps"] if "publish-unit-test-result-action" in s.get("uses", "")]
    assert len(reporter) == 1 and reporter[0]["with"]["files"] == f"{job['env']['OUT']}/junit.xml"
    assert any(s.get("uses", "").startswith("actions/upload-artifact@") for s in job["steps"])
    gl = yaml.safe_load(GITLAB.read_text())["clockbench"]
    assert '--junit "$OUT/junit.xml"' in GITLAB.read_text()
    assert gl["artifacts"]["reports"]["junit"] == f"{gl['variables']['OUT']}/junit.xml"
    assert gl["artifacts"]["when"] == "always"


def test_the_kvm_step_opens_the_runners_kvm_and_says_when_it_cannot():
    gh = GITHUB.read_text()
    assert "KERNEL==\"kvm\", GROUP=\"kvm\", MODE=\"0666\", OPTIONS+=\"static_node=kvm\"" in gh
    assert "sudo udevadm trigger --name-match=kvm" in gh
    for text in (gh, GITLAB.read_text()):
        # the check is the tool's own (qemu.kvm_usable): can /dev/kvm be opened read-write?
        assert "(exec 3<>/dev/kvm)" in text and "ACCEL=tcg" in text and "ACCEL=kvm" in text
        # and, as qemu.resolve_accel("auto") does, a KVM that emulates every instruction is not used
        assert f"[ -e {qemu.PVM_MODULE} ]" in text
        assert "the image runs under TCG" in text
    assert "::warning" in gh
