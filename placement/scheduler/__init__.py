"""The scheduler extension: stock Flink 2.x placing every subtask of an unmodified job where a schedulercfg says.

The Java side lives in ``scheduler/`` at the repository top (see its README for the file formats and how it works).
This package builds it with ``javac`` against the jars of the Flink installation it targets, installs it into that
installation's ``lib/``, and says how JobManagers and TaskManagers must be configured and launched for it to take
effect. Everything here is what ``placement scheduler``, the lab, ``apply`` and the Ansible role share.

Contract (kept stable; documented in ``scheduler/README.md`` section "Python API").
"""

from __future__ import annotations

from placement.scheduler.build import ExtensionJar, build_extension
from placement.scheduler.check import (
    ExtensionStatus,
    extension_active,
    extension_error,
    extension_message,
    extension_status,
)
from placement.scheduler.install import (
    install_extension,
    installed_extension,
    launcher_classpath,
)
from placement.scheduler.naming import (
    ACTIVE_LOG_LINE,
    JOB_FILE_KEY,
    SCHEDULER_DIR_KEY,
    TASKMANAGERS_FILENAME,
    jobmanager_config,
    render_taskmanagers,
    schedulercfg_filename,
    taskmanager_config,
    taskmanager_resource_name,
)

__all__ = [
    "ACTIVE_LOG_LINE",
    "JOB_FILE_KEY",
    "SCHEDULER_DIR_KEY",
    "TASKMANAGERS_FILENAME",
    "ExtensionJar",
    "ExtensionStatus",
    "build_extension",
    "extension_active",
    "extension_error",
    "extension_message",
    "extension_status",
    "install_extension",
    "installed_extension",
    "jobmanager_config",
    "launcher_classpath",
    "render_taskmanagers",
    "schedulercfg_filename",
    "taskmanager_config",
    "taskmanager_resource_name",
]
