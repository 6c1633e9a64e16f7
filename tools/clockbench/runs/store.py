"""The store of runs: one SQLite file (build/clockbench.db by default) that
every `clockbench run`, `capture` and `lab` adds to, `clockbench import`
fills from kept run folders and logs, and `runs`, `fleet` and `export` read
(docs/fleet.md, "The store").

Each run is a row of `runs` (its machine, CPU, firmware, boot path, image
build, date, status, and its whole log, compressed: nothing is lost), a row
of `checks` per check, and a row of `figures` per key figure (figures.py);
a machine's ACPI previews (`clockbench acpi --store`, acpi.py) are rows of
`acpi_previews`, each with its whole --json object, compressed.
The schema's version is SQLite's user_version, and the file is marked as
ours by its application_id; MIGRATIONS brings an older store up to date in
one transaction, and a newer one is refused. Many processes may write at
once: the store runs in WAL mode, every write is one IMMEDIATE transaction,
and a writer waits up to BUSY_TIMEOUT_S for another's lock. A new store is
made whole under a temporary name beside it and linked into place, so that
no opener ever meets one half-made (tables, but no application id yet)."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import os
import sqlite3
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from clockbench import errors, paths
from clockbench.records import figures, records, results
from clockbench.runs import osruns

# CLOCKBENCH_STORE names another (the tests' targets in the Makefile point it into build/test/)
DEFAULT = Path(os.environ.get("CLOCKBENCH_STORE") or paths.BUILD / "clockbench.db")
APPLICATION_ID = 0x434C4B42  # "CLKB": a SQLite file with another id is someone else's
BUSY_TIMEOUT_S = float(os.environ.get("CLOCKBENCH_STORE_TIMEOUT", "60"))
SQLITE_MAGIC = b"SQLite format 3\x00"

# MIGRATIONS[i] takes a store from version i to i + 1; SCHEMA_VERSION is their number.
MIGRATIONS = [
    # 1: runs, their checks and their figures
    """
    CREATE TABLE runs (
      id INTEGER PRIMARY KEY,
      uid TEXT NOT NULL UNIQUE,          -- sha256 of the log (and machine): an import twice is one run
      machine TEXT NOT NULL,             -- the machine's name: given, or the port, or QEMU's configuration
      cpu_vendor TEXT, cpu_brand TEXT, cpu_family INTEGER, cpu_model INTEGER, cpu_stepping INTEGER,
      hypervisor TEXT,
      firmware TEXT,                     -- bios, uefi, qboot, or NULL when not known
      boot TEXT,                         -- direct, iso, disk, netboot-bios, netboot-uefi, ...
      loader TEXT, multiboot INTEGER,    -- as the image saw them
      image_build TEXT,
      profile TEXT,
      started TEXT, ended TEXT, seconds REAL,   -- UTC, ISO 8601
      status TEXT NOT NULL,              -- passed, failed, nothing ran, crashed, incomplete, did not run
      exit INTEGER,                      -- as `clockbench run` exits: 0-5
      reason TEXT,                       -- why it did not pass (an incomplete run: why it stopped)
      source TEXT NOT NULL,              -- run, capture, lab, import
      log_path TEXT,
      cmdline TEXT,
      host TEXT,
      log BLOB,                          -- the whole log, zlib-compressed
      added TEXT NOT NULL
    );
    CREATE INDEX runs_machine ON runs (machine, started);
    CREATE TABLE checks (
      run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
      name TEXT NOT NULL, result TEXT NOT NULL, detail TEXT
    );
    CREATE INDEX checks_run ON checks (run_id);
    CREATE TABLE figures (
      run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
      name TEXT NOT NULL, value REAL NOT NULL, uncertainty REAL, unit TEXT, detail TEXT
    );
    CREATE INDEX figures_run ON figures (run_id, name);
    """,
    # 2: where a fleet machine was reached: its labgrid place, its MAC address (netboot)
    """
    ALTER TABLE runs ADD COLUMN place TEXT;
    ALTER TABLE runs ADD COLUMN mac TEXT;
    """,
    # 3: which program wrote the log: "clockbench" (the image) or "clockbench-os"
    # (Linux); NULL for a run that never reached either. Older rows are filled
    # in from their logs by _fill_tool.
    """
    ALTER TABLE runs ADD COLUMN tool TEXT;
    """,
    # 4: what `clockbench acpi` read of a machine's tables before the stick
    # was booted there, kept per machine beside its runs
    """
    CREATE TABLE acpi_previews (
      id INTEGER PRIMARY KEY,
      uid TEXT NOT NULL UNIQUE,          -- sha256 of the preview (without its time) and machine: the same tables kept twice are one
      machine TEXT NOT NULL,             -- as its runs name it: given, or the host name (sysfs), or the file's name
      taken TEXT NOT NULL,               -- UTC, ISO 8601: when the tables were read
      source TEXT NOT NULL,              -- the path read
      source_kind TEXT NOT NULL,         -- sysfs, folder, acpidump
      host TEXT,                         -- the host the tool ran on (NULL for an import)
      summary TEXT NOT NULL,             -- one line: the counters and their addresses, the CPUs
      problems INTEGER NOT NULL,         -- tables rejected or cut short (the tool exited 65 on them)
      origin TEXT NOT NULL,              -- acpi (`clockbench acpi --store`) or import
      preview BLOB NOT NULL,             -- the whole --json object, zlib-compressed
      added TEXT NOT NULL
    );
    CREATE INDEX acpi_previews_machine ON acpi_previews (machine, taken);
    """,
    # 5: the runs `runs --delete` deleted, by their log's SHA-256 (without the
    # machine, so that no other name brings one back): `import` of the kept
    # folder or log leaves them out (--again adds one back)
    """
    CREATE TABLE deleted_runs (
      log_sha256 TEXT PRIMARY KEY,
      run_id INTEGER NOT NULL,           -- the id it had
      machine TEXT NOT NULL,
      log_path TEXT,                     -- where its log was kept: the folder or file stays
      deleted TEXT NOT NULL              -- UTC, ISO 8601
    );
    """,
    # 6: the Linux host a clockbench-os run measured, from its log's `os`
    # record (docs/output.md): its name, machine id, kernel, the clocksource
    # in use and those available, and whether the kernel marked the TSC
    # unstable (1, 0, NULL when unknown) with its words. NULL for runs of the
    # image; older OS runs are filled in from their logs by _fill_os.
    """
    ALTER TABLE runs ADD COLUMN hostname TEXT;
    ALTER TABLE runs ADD COLUMN machine_id TEXT;
    ALTER TABLE runs ADD COLUMN kernel TEXT;
    ALTER TABLE runs ADD COLUMN clocksource TEXT;
    ALTER TABLE runs ADD COLUMN clocksources TEXT;
    ALTER TABLE runs ADD COLUMN tsc_unstable INTEGER;
    ALTER TABLE runs ADD COLUMN tsc_unstable_why TEXT;
    CREATE INDEX runs_tool ON runs (tool, machine)
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
OS_COLUMNS = ("hostname", "machine_id", "kernel", "clocksource", "clocksources", "tsc_unstable", "tsc_unstable_why")

# A run whose log holds no clockbench record at all: the machine was never
# reached, or the image never started (a place nobody exports, a port that
# will not open). Kept, with its reason, but no machine's row in the fleet.
DID_NOT_RUN = "did not run"
OS_TOOL = "clockbench-os"
# record types no figure, check or row column is read from (figures.derive, run_row): not decoded to store a run
NO_FIGURES = frozenset({"histogram", "os_histogram", "lang_histogram"})

RUN_COLUMNS = ("id", "machine", "place", "mac", "tool", "cpu_vendor", "cpu_brand", "cpu_family", "cpu_model", "cpu_stepping",
               "hypervisor", "firmware", "boot", "loader", "multiboot", "image_build", "profile", "started", "ended",
               "seconds", "status", "exit", "reason", "source", "log_path", "cmdline", "host", "added", "uid", *OS_COLUMNS)


class StoreBusy(errors.ToolError):
    code = errors.STORE_BUSY


class StoreCorrupt(errors.ToolError):
    code = errors.STORE_CORRUPT


class WasDeleted(errors.ToolError):
    """A log whose run `runs --delete` deleted: not added again unless asked."""
    code = errors.BAD_INPUT

    def __init__(self, message: str, run_id: int):
        super().__init__(message)
        self.run_id = run_id


def log_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def translate(e: sqlite3.Error, path: Path) -> errors.ToolError:
    """A sqlite3 error as the ToolError a user can act on."""
    text = str(e)
    if "locked" in text or "busy" in text:
        return StoreBusy(f"{path}: the store is locked by another process (waited {BUSY_TIMEOUT_S:g} s); "
                         "try again when it is done")
    if isinstance(e, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text or "corrupt" in text):
        return StoreCorrupt(f"{path}: the store is damaged ({text}); move it aside, and `clockbench import` the "
                            "kept run folders into a new one")
    if "readonly" in text or "unable to open" in text or "disk I/O" in text:
        return errors.CannotWrite(f"{path}: cannot use the store: {text}")
    return StoreCorrupt(f"{path}: the store cannot be read: {text}")


@dataclass
class Run:
    """One run as the store hands it back."""

    row: dict
    figures: dict[str, figures.Figure]
    checks: list[dict]

    def __getitem__(self, key):
        return self.row[key]

    def get(self, key, default=None):
        return self.row.get(key, default)


class Store:
    def __init__(self, path: Path, create: bool = True):
        self.path = Path(path)
        if self.path.is_dir():
            raise errors.NoInput(f"{self.path}: is a folder; --store names the store's file")
        exists = self.path.is_file() and self.path.stat().st_size > 0
        if not exists and not create:
            raise errors.NoInput(f"{self.path}: no store here (`clockbench run`, `capture` or `import` makes it)")
        if not exists and not self.path.exists():
            exists = self._make_aside()
        if exists:
            try:
                with self.path.open("rb") as f:
                    head = f.read(len(SQLITE_MAGIC))
            except OSError as e:
                raise errors.NoInput(f"{self.path}: cannot read the store: {e.strerror or e}") from None
            if head != SQLITE_MAGIC:
                raise StoreCorrupt(f"{self.path}: not a SQLite file (it does not begin with the SQLite header): "
                                   "not a clockbench store, or a damaged one; nothing was changed")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            raise errors.CannotWrite(f"{self.path}: cannot open the store: {e}") from None
        self.db.row_factory = sqlite3.Row
        try:
            self._prepare()
        except sqlite3.Error as e:
            self.db.close()
            raise translate(e, self.path) from None
        except errors.ToolError:
            self.db.close()
            raise

    def _prepare(self) -> None:
        db = self.db
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        # WAL's own durability: a commit is not synced to the disk, the WAL is at each checkpoint. A power
        # cut may lose the last runs added (their logs are kept where they were: `import` brings them back),
        # never damage the store; and an import of hundreds of hosts is not one sync per run (500: 10 s here).
        db.execute("PRAGMA synchronous = NORMAL")
        # one snapshot for the three: read one by one, another process's first
        # migration could commit between them (tables, but no application id yet)
        db.execute("BEGIN")
        try:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            app = db.execute("PRAGMA application_id").fetchone()[0]
        finally:
            db.execute("COMMIT")
        if app != APPLICATION_ID and (tables or version):
            raise errors.BadInput(f"{self.path}: a SQLite file, but not a clockbench store (application id {app:#x}, "
                                  f"tables {', '.join(tables[:5]) or 'none'}); nothing was changed")
        if version > SCHEMA_VERSION:
            raise errors.NewerSchema(f"{self.path}: the store is schema version {version}; this tool knows up to "
                                     f"{SCHEMA_VERSION}: refused (update clockbench); nothing was changed")
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            _to_wal(db)
        db.execute("PRAGMA foreign_keys = ON")
        if version < SCHEMA_VERSION:
            _migrate(db)

    def _make_aside(self) -> bool:
        """Makes the new store whole under a temporary name in its folder
        and links it into place: openers meet no file, or a whole store.
        A link never replaces a file, so when another opener linked its own
        first, that one is the store and this one is dropped. Returns
        whether the store's file is there now (False where the folder's
        file system has no hard links: the store is then made in place,
        which _prepare's one snapshot and _to_wal's wait keep safe, though
        an opener may meet it still empty)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise errors.CannotWrite(f"{self.path}: cannot open the store: {e}") from None
        aside = self.path.with_name(f".{self.path.name}.new-{os.getpid()}-{os.urandom(4).hex()}")
        try:
            db = sqlite3.connect(str(aside), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            try:
                _migrate(db)
                # last, and into the file itself (no -wal to leave behind): the link carries it
                db.execute("PRAGMA journal_mode = WAL")
            finally:
                db.close()
            try:
                os.link(aside, self.path)
            except FileExistsError:
                pass
            except OSError:
                return False
            return True
        except (OSError, sqlite3.Error) as e:
            raise errors.CannotWrite(f"{self.path}: cannot open the store: {e} (a new store is made in its folder, "
                                     "then linked into place)") from None
        finally:
            for suffix in ("", "-journal", "-wal", "-shm"):
                Path(f"{aside}{suffix}").unlink(missing_ok=True)

    @property
    def version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- writing --------------------------------------------------------------

    def add_log(self, text: str, machine: str, source: str, *, meta: dict | None = None, incomplete_ok: bool = False,
                again: bool = False) -> tuple[int, bool]:
        """Adds one run from its log; returns (its id, whether it is new: a
        log already in the store is not added twice). A log that is not
        clockbench's raises BadInput, unless incomplete_ok (a capture that
        read nothing, or garbage, is still a run that never ended: kept with
        its reason). A log whose run was deleted raises WasDeleted, unless
        again (then it is added back, and no longer counted as deleted)."""
        meta = dict(meta or {})
        if text.strip():
            gone = self._query("SELECT run_id, deleted FROM deleted_runs WHERE log_sha256 = ?", (log_sha256(text),))
            if gone and not again:
                raise WasDeleted(f"{meta.get('log_path') or machine}: run {gone[0]['run_id']}, deleted from the store on "
                                 f"{gone[0]['deleted'][:10]} (`runs --delete`): not added again (`import --again` adds it back)",
                                 gone[0]["run_id"])
            if gone:
                self.db.execute("DELETE FROM deleted_runs WHERE log_sha256 = ?", (log_sha256(text),))
        res = None
        # once: the results, the figures and the row read the same records; no figure reads a histogram
        # (half a clockbench-os log's records, and most of the time reading it: the whole log is kept)
        log = records.parse_log(text, skip=NO_FIGURES)
        raw = log.records
        try:
            res = results.load_any(text, source=meta.get("log_path") or machine, log=log)
        except errors.BadInput as e:
            if not incomplete_ok:
                raise
            meta.setdefault("reason", str(e))
        row = run_row(res, text, machine, source, meta, raw)
        figs = figures.derive(res, raw) if res else []
        checks = [c for c in (res or {}).get("checks", []) if isinstance(c, dict)]
        return self._insert(row, figs, checks)

    def add_os_run(self, log: Path, machine: str | None = None, source: str = "import", *, meta: dict | None = None,
                   again: bool = False) -> tuple[int, bool]:
        """Adds one clockbench-os run (its log, or the kept run folder
        holding os.log) under machine (default: the hostname its log gives,
        else the folder's <host>, else the file's name); returns (the run's
        id, whether it is new). What other code calls: `clockbench hosts`
        passes each inventory host's name and source "hosts". BadInput for a
        log that is not clockbench's (nothing is stored), WasDeleted as
        add_log, OSError when it cannot be read."""
        log = Path(log)
        folder = log if log.is_dir() else None
        if folder is not None:
            log = folder / osruns.OS_LOG
        text = log.read_bytes().decode("utf-8", "replace")
        name = machine or osruns.machine_name(text, osruns.folder_host(folder) if folder is not None else log.stem)
        meta = {"log_path": str(log), "started": log_date(log, text), **(meta or {})}
        return self.add_log(text, name, source, meta=meta, again=again)

    def _insert(self, row: dict, figs: list[figures.Figure], checks: list[dict]) -> tuple[int, bool]:
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                old = db.execute("SELECT id FROM runs WHERE uid = ?", (row["uid"],)).fetchone()
                if old:
                    db.execute("COMMIT")
                    return old[0], False
                cols = list(row)
                cur = db.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                 [row[c] for c in cols])
                rid = cur.lastrowid
                db.executemany("INSERT INTO checks (run_id, name, result, detail) VALUES (?, ?, ?, ?)",
                               [(rid, str(c.get("name")), str(c.get("result")), c.get("detail")) for c in checks])
                db.executemany("INSERT INTO figures (run_id, name, value, uncertainty, unit, detail) VALUES (?, ?, ?, ?, ?, ?)",
                               [(rid, f.name, f.value, f.uncertainty, f.unit, f.detail) for f in figs])
                db.execute("COMMIT")
                return rid, True
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise translate(e, self.path) from None

    def add_acpi_preview(self, preview: dict, machine: str, origin: str, *, host: str | None = None,
                         taken: str | None = None) -> tuple[int, bool]:
        """Keeps one `clockbench acpi --json` object (whole) as machine's;
        returns (its id, whether it is new: the same tables of the same
        machine, read again, are the preview already kept)."""
        check_preview(preview)
        body = {k: v for k, v in preview.items() if k != "taken"}
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode())
        digest.update(b"\0" + machine.encode())
        row = {"uid": digest.hexdigest(), "machine": machine, "taken": preview.get("taken") or taken or _now(),
               "source": str(preview["source"]), "source_kind": str(preview["source_kind"]), "host": host,
               "summary": acpi_summary(preview), "problems": preview_problems(preview), "origin": origin,
               "preview": zlib.compress(json.dumps(preview).encode(), 6), "added": _now()}
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                old = db.execute("SELECT id FROM acpi_previews WHERE uid = ?", (row["uid"],)).fetchone()
                if old:
                    db.execute("COMMIT")
                    return old[0], False
                cols = list(row)
                cur = db.execute(f"INSERT INTO acpi_previews ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                 [row[c] for c in cols])
                db.execute("COMMIT")
                return cur.lastrowid, True
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise translate(e, self.path) from None

    # -- reading --------------------------------------------------------------

    def _query(self, sql: str, args=()) -> list[sqlite3.Row]:
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            raise translate(e, self.path) from None

    def runs(self, latest: bool = False, machine: str | None = None) -> list[Run]:
        """Every run, oldest first (latest: each machine's newest only)."""
        cols = ", ".join(RUN_COLUMNS)
        where, args = ("WHERE machine = ?", (machine,)) if machine else ("", ())
        rows = self._query(f"SELECT {cols} FROM runs {where} ORDER BY started, id", args)
        if latest:
            newest: dict[str, sqlite3.Row] = {}
            for r in rows:
                newest[r["machine"]] = r
            rows = sorted(newest.values(), key=lambda r: (r["started"] or "", r["id"]))
        ids = [r["id"] for r in rows]
        figs: dict[int, dict] = {i: {} for i in ids}
        checks: dict[int, list] = {i: [] for i in ids}
        # every figure and check, filtered here: one bound parameter a run
        # would pass SQLite's limit (999 before 3.32) on a store of many runs
        for f in self._query("SELECT * FROM figures"):
            if f["run_id"] in figs:
                figs[f["run_id"]][f["name"]] = figures.Figure(f["name"], f["value"], f["uncertainty"], f["unit"] or "", f["detail"] or "")
        for c in self._query("SELECT * FROM checks ORDER BY rowid"):
            if c["run_id"] in checks:
                checks[c["run_id"]].append({"name": c["name"], "result": c["result"], "detail": c["detail"]})
        return [Run(dict(r), figs[r["id"]], checks[r["id"]]) for r in rows]

    def delete(self, run_ids: list[int]) -> list[int]:
        """Deletes these runs with their checks and figures, all or none;
        returns the ids that were not in the store (then nothing is deleted)."""
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                missing = [i for i in run_ids if not db.execute("SELECT 1 FROM runs WHERE id = ?", (i,)).fetchone()]
                if not missing:
                    for i in run_ids:  # remembered by its log, so that `import` of its kept folder leaves it out
                        blob, machine, path = db.execute("SELECT log, machine, log_path FROM runs WHERE id = ?", (i,)).fetchone()
                        text = zlib.decompress(blob).decode("utf-8", "replace") if blob is not None else ""
                        if text.strip():
                            db.execute("INSERT OR REPLACE INTO deleted_runs (log_sha256, run_id, machine, log_path, deleted) "
                                       "VALUES (?, ?, ?, ?, ?)", (log_sha256(text), i, machine, path, _now()))
                    db.executemany("DELETE FROM runs WHERE id = ?", [(i,) for i in run_ids])
                db.execute("COMMIT")
                return missing
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise translate(e, self.path) from None

    def machines(self) -> dict[str, int]:
        """Each machine's name and its number of runs."""
        return {r[0]: r[1] for r in self._query("SELECT machine, count(*) FROM runs GROUP BY machine ORDER BY machine")}

    def acpi_previews(self, machine: str | None = None) -> list[dict]:
        """The kept ACPI previews, oldest first (by when they were taken):
        each its row, with the whole preview under "preview"."""
        where, args = ("WHERE machine = ?", (machine,)) if machine else ("", ())
        out = []
        for r in self._query(f"SELECT * FROM acpi_previews {where} ORDER BY taken, id", args):
            row = dict(r)
            try:
                row["preview"] = json.loads(zlib.decompress(row["preview"]))
            except (zlib.error, ValueError) as e:
                raise StoreCorrupt(f"{self.path}: ACPI preview {row['id']} is damaged ({e})") from None
            out.append(row)
        return out

    def acpi_machines(self) -> dict[str, int]:
        """Each machine with a kept ACPI preview, and how many."""
        return {r[0]: r[1] for r in self._query("SELECT machine, count(*) FROM acpi_previews GROUP BY machine ORDER BY machine")}

    def log(self, run_id: int) -> str | None:
        r = self._query("SELECT log FROM runs WHERE id = ?", (run_id,))
        return zlib.decompress(r[0][0]).decode("utf-8", "replace") if r and r[0][0] is not None else None

    def kept_log(self, run_id: int) -> Path | None:
        """Where the run's log is kept, when that file still holds the very
        log the store has (a run folder, an imported log); else None."""
        r = self._query("SELECT log_path, log FROM runs WHERE id = ?", (run_id,))
        if not r or not r[0][0] or r[0][1] is None:
            return None
        p = Path(r[0][0])
        try:
            same = p.is_absolute() and p.is_file() and log_sha256(p.read_text(errors="replace")) == \
                log_sha256(zlib.decompress(r[0][1]).decode("utf-8", "replace"))
        except OSError:
            return None
        return p if same else None

    def count(self) -> int:
        return self._query("SELECT count(*) FROM runs")[0][0]

    # -- export ---------------------------------------------------------------

    def tables(self, run_ids: list[int] | None = None) -> dict[str, tuple[list[str], list[tuple]]]:
        """runs (without the logs), checks, figures and the ACPI previews
        (without the previews themselves: `runs --acpi --json` has them), as
        (columns, rows); with run_ids, only those runs, their checks and
        figures (and no previews)."""
        out = {}
        for name, sql in (("runs", f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY id"),
                          ("checks", "SELECT run_id, name, result, detail FROM checks ORDER BY run_id, rowid"),
                          ("figures", "SELECT run_id, name, value, uncertainty, unit, detail FROM figures ORDER BY run_id, rowid"),
                          ("acpi_previews", "SELECT id, machine, taken, source, source_kind, host, summary, problems, origin, added "
                           "FROM acpi_previews ORDER BY id")):
            if run_ids is not None and name == "acpi_previews":
                continue
            rows = self._query(sql)
            if run_ids is not None:  # filtered here: one bound parameter a run would pass SQLite's limit
                key = "id" if name == "runs" else "run_id"
                rows = [r for r in rows if r[key] in set(run_ids)]
            cols = list(rows[0].keys()) if rows else [c.strip() for c in sql.split("SELECT ")[1].split(" FROM")[0].split(",")]
            out[name] = (cols, [tuple(r) for r in rows])
        return out


def _to_wal(db: sqlite3.Connection) -> None:
    """Switches a store made in SQLite's rollback mode (by an older tool, or
    in place) to WAL. SQLite refuses the switch at once, without its busy
    wait, while another connection holds the write lock (another opener's
    switch or migration): tried again until BUSY_TIMEOUT_S, as any write waits."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if db.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal":
                return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise
        if time.monotonic() > deadline:
            raise sqlite3.OperationalError("database is locked")
        time.sleep(0.01)


def _migrate(db: sqlite3.Connection) -> None:
    """Brings a store up to SCHEMA_VERSION, and marks it as ours, in one
    IMMEDIATE transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]  # another writer may have migrated meanwhile
        for i in range(version, SCHEMA_VERSION):
            for stmt in MIGRATIONS[i].split(";"):
                if stmt.strip():
                    db.execute(stmt)
        if version < 3 <= SCHEMA_VERSION:
            _fill_tool(db)
        if version < 6 <= SCHEMA_VERSION:
            _fill_os(db)
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _fill_tool(db: sqlite3.Connection) -> None:
    """Migration 3's data: each older run's tool, read from its log's
    schema record; a log with no record at all did not run."""
    for rid, blob in db.execute("SELECT id, log FROM runs").fetchall():
        text = zlib.decompress(blob).decode("utf-8", "replace") if blob is not None else ""
        tool = _tool_of(records.parse_log(text).records)
        db.execute("UPDATE runs SET tool = ? WHERE id = ?", (tool, rid))
        if tool is None:
            db.execute("UPDATE runs SET status = ? WHERE id = ?", (DID_NOT_RUN, rid))


def _fill_os(db: sqlite3.Connection) -> None:
    """Migration 6's data: each older clockbench-os run's host, read from its log."""
    for rid, blob in db.execute("SELECT id, log FROM runs WHERE tool = ?", (OS_TOOL,)).fetchall():
        text = zlib.decompress(blob).decode("utf-8", "replace") if blob is not None else ""
        ident = osruns.identity(records.parse_log(text).records)
        db.execute(f"UPDATE runs SET {', '.join(f'{k} = ?' for k in OS_COLUMNS)} WHERE id = ?",
                   [ident[k] for k in OS_COLUMNS] + [rid])


def run_row(res: dict | None, text: str, machine: str, source: str, meta: dict, recs: list[dict] | None = None) -> dict:
    """The runs row of one run: from its results, with what the caller knows
    (meta: firmware, boot, started, seconds, exit, log_path, place, mac...)
    taking precedence where the log cannot know it. recs: the log's records,
    when the caller parsed them already."""
    if recs is None:
        recs = records.parse_log(text).records if text.strip() else []
    m = (res or {}).get("machine") or {}
    if res is not None:
        code, why = results.outcome(res)
        s = (res.get("summary") or {}).get("status")
        status = s if isinstance(s, str) and res.get("complete") else ("crashed" if code == 3 else "incomplete")
    else:
        code, why, status = results.NO_VERDICT, None, "incomplete"
    if meta.get("exit") is not None and meta["exit"] >= 4 and status != "crashed":
        status = "incomplete"
    tool = _tool_of(recs) if text.strip() else None
    if tool is None:
        status = DID_NOT_RUN
    digest = hashlib.sha256(text.encode("utf-8", "replace"))
    digest.update(machine.encode())
    if res is None or not text.strip():  # nothing to tell two empty captures apart by: each is its own run
        digest.update(os.urandom(16))
    prof = (res or {}).get("profile") or {}
    gi = lambda v: v if isinstance(v, int) and not isinstance(v, bool) else None  # noqa: E731
    gs = lambda v: v if isinstance(v, str) else None  # noqa: E731
    row = {
        "uid": digest.hexdigest(), "machine": machine,
        "cpu_vendor": gs(m.get("vendor")), "cpu_brand": " ".join(m["brand"].split()) if gs(m.get("brand")) else None,
        "cpu_family": gi(m.get("family")), "cpu_model": gi(m.get("model")), "cpu_stepping": gi(m.get("stepping")),
        "hypervisor": gs(m.get("hypervisor")), "firmware": meta.get("firmware"), "boot": meta.get("boot"),
        "loader": gs(m.get("loader")), "multiboot": gi(m.get("multiboot")),
        "image_build": (res or {}).get("build") if gs((res or {}).get("build")) else meta.get("image_build"),
        "profile": gs(prof.get("name")), "started": meta.get("started") or _now(), "ended": meta.get("ended"),
        "seconds": meta.get("seconds"), "status": status,
        "exit": meta["exit"] if meta.get("exit") is not None else code,
        "reason": meta.get("reason") or why, "source": source, "log_path": meta.get("log_path"),
        "cmdline": gs(m.get("cmdline")) or meta.get("cmdline"), "host": meta.get("host"),
        "log": zlib.compress(text.encode("utf-8", "replace"), 6), "added": _now(),
        "place": meta.get("place"), "mac": meta.get("mac"), "tool": tool,
    }
    if tool == OS_TOOL:
        row.update(osruns.identity(recs))
        row["host"] = row["host"] or row["hostname"]
    return row


PREVIEW_KEYS = {"source": str, "source_kind": str, "acpi_record": dict, "pm_timer": dict, "hpet_table": dict,
                "madt": dict, "tables": list, "problems": list}


def check_preview(v) -> None:
    """BadInput unless v is a `clockbench acpi --json` object (docs/output.md)."""
    if not isinstance(v, dict):
        raise errors.BadInput("not a `clockbench acpi --json` object")
    wrong = [k for k, t in PREVIEW_KEYS.items() if not isinstance(v.get(k), t)]
    if wrong:
        raise errors.BadInput(f"not a `clockbench acpi --json` object (no {', '.join(wrong)} of the right type)")


def is_preview(v) -> bool:
    return isinstance(v, dict) and "acpi_record" in v and "source_kind" in v


def preview_problems(v: dict) -> int:
    return len(v.get("problems") or []) + sum(1 for t in v.get("tables") or [] if isinstance(t, dict) and not t.get("valid", True))


def _addr(space, address) -> str:
    shown = {"io": "I/O", "memory": "MMIO"}.get(space, space)
    return f"{shown} 0x{address:x}" if isinstance(address, int) else "?"


def acpi_summary(v: dict) -> str:
    """A preview in one line: the counters the stick will find there, their
    addresses, and the CPUs."""
    h, pm, a = v.get("hpet_table") or {}, v.get("pm_timer") or {}, v.get("acpi_record") or {}
    parts = []
    if h.get("found"):
        parts.append(f"HPET {_addr(h.get('space'), h.get('address'))} ({h.get('comparators')} comparators, "
                     f"{'64' if h.get('counter_64bit') else '32'}-bit, min tick {h.get('min_tick')})")
    else:
        parts.append(f"HPET none ({h.get('reason') or 'no HPET table'})")
    if pm.get("found"):
        parts.append(f"PM timer {_addr(pm.get('space'), pm.get('address'))} {pm.get('counter_bits')}-bit"
                     + (f", {pm['os_note']}" if pm.get("os_note") else ""))
    else:
        parts.append(f"PM timer none ({pm.get('reason') or 'none in the FADT'})")
    if (v.get("madt") or {}).get("found"):
        parts.append(f"{a.get('cpus_enabled')} of {a.get('cpus_listed')} CPUs enabled")
    else:
        parts.append("no valid MADT")
    bad = preview_problems(v)
    return "; ".join(parts) + (f"; {bad} table problem{'' if bad == 1 else 's'}" if bad else "")


def _tool_of(recs: list[dict]) -> str | None:
    """Which program wrote a log (its schema record's tool, "clockbench"
    when it names none), or None when the log holds no record at all."""
    if not recs:
        return None
    schema = next((r for r in recs if r.get("type") == "schema"), None) or {}
    tool = schema.get("tool")
    return tool if isinstance(tool, str) else "clockbench"


def default_text() -> str:
    """The default store as --help shows it: relative to the checkout when it is inside it."""
    return paths.default(DEFAULT) if DEFAULT.is_relative_to(paths.ROOT) else str(DEFAULT)


def log_date(p: Path, text: str | None = None) -> str:
    """When a log's run began: a clockbench-os log's `os` record's
    `started_utc` (the system's clock); a bare log's RTC date and time its
    `rtc` record read as the drift window opened (the RTC's own zone, taken
    as UTC, as a PC's RTC usually keeps it under Linux and UEFI); else the
    file's time. text: the log's, when the caller has read it already."""
    if text is None:
        try:
            text = p.read_bytes().decode("utf-8", "replace")
        except OSError:
            text = ""
    started = (osruns.os_record(text) or {}).get("started_utc")
    if isinstance(started, str):
        try:
            return dt.datetime.fromisoformat(started.replace("Z", "+00:00")).isoformat(timespec="seconds")
        except ValueError:
            pass
    rtc = None if osruns.os_record(text) else next(
        (r for r in records.parse_log(text).records if r.get("type") == "rtc" and r.get("date") and r.get("time")), None)
    if rtc is not None:
        try:
            when = dt.datetime.fromisoformat(f"{rtc['date']}T{rtc['time']}").replace(tzinfo=dt.timezone.utc)
            return when.isoformat(timespec="seconds")
        except (TypeError, ValueError):
            pass  # a date the RTC got wrong: the file's time instead
    return dt.datetime.fromtimestamp(p.stat().st_mtime, dt.timezone.utc).isoformat(timespec="seconds")


def open_store(path, create: bool = True) -> Store:
    return Store(Path(path), create=create)


def id_ranges(ids: list[int]) -> str:
    """1-3, 7, 9-12"""
    out, ids = [], sorted(ids)
    if not ids:
        return ""
    start = prev = ids[0]
    for i in ids[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(out)


def held(st: Store) -> str:
    """What a store holds, for a line saying an id is not in it."""
    ids = [r[0] for r in st._query("SELECT id FROM runs ORDER BY id")]
    return f"it holds runs {id_ranges(ids)}" if ids else "it is empty"


def stored_run(arg: str, store_path) -> tuple[int, str] | None:
    """A RUN argument of `compare`, `report` or `report --os` that names no
    file and is a whole number is a run in the store (`clockbench runs`
    lists their ids): (its id, its whole log). None for anything else (a
    file, which always wins over an id). NoInput when it is neither a file
    nor a run the store holds."""
    if Path(arg).exists() or not arg.isdigit():
        return None
    rid = int(arg)
    try:
        st = open_store(store_path, create=False)
    except errors.NoInput:
        raise errors.NoInput(f"{arg}: no such file, and no store {store_path} to hold a run {rid}") from None
    with st:
        text = st.log(rid)
        if text is None:
            raise errors.NoInput(f"{arg}: no such file, and no run {rid} in {store_path} ({held(st)})")
    return rid, text


def load_run(arg: str, store_path, load_path=results.load_path) -> tuple[dict, str]:
    """A RUN argument's results and its name: a log or results file
    (load_path), or a store id ("run 3")."""
    got = stored_run(str(arg), store_path)
    if got is None:
        return load_path(Path(arg)), str(arg)
    rid, text = got
    return results.load_any(text, source=f"run {rid}"), f"run {rid}"


def record(path, text: str, machine: str, source: str, meta: dict, say=print) -> int | None:
    """The hook `run`, `capture` and `lab` call once a run has ended: adds it
    to the store, and says so in one line. A store that cannot take it never
    costs the run: the log is kept where it was, and the line says how to
    import it later. Returns the run's id, or None."""
    try:
        with open_store(path) as st:
            rid, new = st.add_log(text, machine, source, meta=meta, incomplete_ok=True)
        say(f"stored as run {rid} in {path}" + ("" if new else " (already there)"))
        return rid
    except errors.ToolError as e:
        keep = meta.get("log_path")
        say(f"not stored: {e}" + (f"; the log is kept in {keep} (`clockbench import {keep}` later)" if keep else ""))
        return None


def export_csv(st: Store, out: Path, run_ids: list[int] | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for name, (cols, rows) in st.tables(run_ids).items():
        p = out / f"{name}.csv"
        with p.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(cols)
            w.writerows(rows)
        made.append(p)
    return made


def export_parquet(st: Store, out: Path, run_ids: list[int] | None = None) -> list[Path]:
    """MissingTool without pyarrow."""
    try:
        pq = _pyarrow()
    except ImportError:
        raise errors.MissingTool("pyarrow is not installed (`make deps` puts it in build/pydeps); CSV needs nothing") from None
    import pyarrow as pa

    out.mkdir(parents=True, exist_ok=True)
    made = []
    for name, (cols, rows) in st.tables(run_ids).items():
        table = pa.table({c: [r[i] for r in rows] for i, c in enumerate(cols)})
        p = out / f"{name}.parquet"
        pq.write_table(table, p)
        made.append(p)
    return made


def _pyarrow():
    paths_added = str(paths.BUILD / "pydeps")
    import sys

    if paths_added not in sys.path and Path(paths_added).is_dir():
        sys.path.append(paths_added)
    import pyarrow.parquet as pq

    return pq


def as_json(run: Run) -> dict:
    r = {k: v for k, v in run.row.items()}
    r["figures"] = {n: {"value": f.value, "uncertainty": f.uncertainty, "unit": f.unit, "detail": f.detail}
                    for n, f in sorted(run.figures.items())}
    r["checks"] = run.checks
    return json.loads(json.dumps(r, default=str))
