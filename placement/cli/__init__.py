"""The ``placement`` command line.

Each command group lives in its own module and is imported only when used, so ``placement plan`` never pays for
PySpark or fabric. Every expected failure is a :class:`placement.errors.PlacementError`; :func:`main` prints it on one
line (``error: <file>: <field>: <message>``) and exits with its code, without a traceback.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util  # a submodule: `import importlib` alone does not load it (only an editable install's finder did)
import logging
import signal
import sys

import click

from placement import __version__
from placement.cli.epilog import add_epilogs, epilog_for
from placement.cli.streams import EXIT_BROKEN_PIPE, guarded
from placement.errors import EXIT_BAD_INPUT, EXIT_FAILURE, PlacementError
from placement.signals import interrupted, note_interrupts, replaces_an_interrupt

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C

# command name -> "module:attribute"
COMMANDS = {
    "plan": "placement.cli.plan_cmd:plan",
    "show": "placement.cli.show_cmd:show",
    "inventory": "placement.cli.inventory_cmd:inventory",
    "metrics": "placement.cli.metrics_cmd:metrics",
    "profile": "placement.cli.profile_cmd:profile",
    "netem": "placement.cli.netem_cmd:netem",
    "lab": "placement.cli.lab_cmd:lab",
    "apply": "placement.cli.apply_cmd:apply",
    "scheduler": "placement.cli.scheduler_cmd:scheduler",
    "examples": "placement.cli.examples_cmd:examples",
    "watch": "placement.cli.watch_cmd:watch",
}

HELP = {
    "plan": "Compute an optimal placement and write plan.json, schedulercfg, redeploy script, picture.",
    "show": "Print a written plan's tables again (PLAN_DIR/plan.json), without solving.",
    "inventory": "Validate an inventory or export it for Ansible.",
    "metrics": "Collect per-subtask metrics from a running Flink job.",
    "profile": "Turn collected metrics into a job profile (PySpark).",
    "netem": "Shape WAN links from the inventory with tc.",
    "lab": "A real Flink edge lab on this machine (namespaces, shaped veths, cgroups).",
    "apply": "Put a plan into effect on a running job over SSH and REST.",
    "scheduler": "Build, install and check the scheduler extension (stock Flink reading schedulercfgs).",
    "examples": "Where the shipped example inventories and profiles are (--copy DIR to edit them).",
    "watch": "Keep a running job placed right as its load moves: rolling profile, drift, re-plan, apply.",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        module = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module) is not None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not self._available(name):
            return None
        module, attr = COMMANDS[name].split(":")
        return add_epilogs(getattr(importlib.import_module(module), attr), name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """click says "No such command"; this adds the nearest command name, as click does for a mistyped option."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint} (placement --help lists them)")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, HELP[name]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog=epilog_for(""),
)
@click.version_option(__version__, prog_name="placement")
def cli() -> None:
    """Plan, prove and apply operator placement for Flink jobs across a server and edge task managers.

    From bare hosts to a placed job: inventory -> ansible -> netem -> metrics collect -> profile -> plan -> apply.
    """


def _run(argv: list[str] | None) -> int:
    """The command's exit status; every expected failure said on one line."""
    try:
        cli.main(args=argv, prog_name="placement", standalone_mode=False)
    except PlacementError as exc:
        click.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns a Ctrl-C inside a command into Abort
        click.echo("aborted", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as exc:  # usage errors: one line, exit 2
        click.echo(f"error: {exc.format_message()}", err=True)
        return exc.exit_code if exc.exit_code else EXIT_BAD_INPUT
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Exception as exc:
        # a Ctrl-C can surface wrapped: Python turns one raised in a class body's __set_name__ (an import under way)
        # into a RuntimeError whose context is the interrupt, pydantic-core one during a schema's build into a
        # SchemaError without it
        if not (replaces_an_interrupt(exc) or interrupted()):
            raise
        click.echo("aborted", err=True)
        return EXIT_INTERRUPTED
    return 0


def main(argv: list[str] | None = None) -> None:
    # Libraries' log records stay off the terminal: with no handler on the root logger, a module-level
    # logging.exception (py4j's on a Ctrl-C during a Spark call) configures one that prints a traceback on stderr.
    # Every failure the tool expects reaches the user as one line of its own.
    if not logging.getLogger().handlers:
        logging.getLogger().addHandler(logging.NullHandler())
    # stdout's failures (`| head`, `>&-`, `>/dev/full`) never stop a command half-way: said once it is done
    if argv is None:  # the `placement` process: a Ctrl-C that a library turns into another error is still one
        note_interrupts()
    with guarded(process=argv is None) as stdout:
        try:
            code = _run(argv)
            # The command is over (its output and files complete): a Ctrl-C from here on would only turn the
            # interpreter's shutdown into a traceback or a death by signal, so it is ignored — in the `placement`
            # process only (argv None): a caller in the same process (a test's main([...])) keeps its own handler,
            # and the processes it starts later do not inherit an ignored SIGINT.
            if argv is None:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        except KeyboardInterrupt:  # it landed between the command's end and the line above
            click.echo("aborted", err=True)
            code = EXIT_INTERRUPTED
        except SystemExit as exc:  # a command's own sys.exit(n)
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if isinstance(exc.code, str):
                click.echo(exc.code, err=True)
        stdout.flush()
        problem = stdout.problem()
    if problem:
        click.echo(f"error: {problem}", err=True)
        code = code or EXIT_FAILURE
    elif stdout.broken_pipe:  # the reader stopped reading (`| head`): quiet, as `git log | head`
        code = code or EXIT_BROKEN_PIPE
    sys.exit(code)
