"""WAN emulation with tc: pure command building (:mod:`.tc`), inventory -> shapes (:mod:`.plan`), named profiles
(:mod:`.profiles`), reading tc back (:mod:`.status`) and running it on hosts (:mod:`.ops`)."""
