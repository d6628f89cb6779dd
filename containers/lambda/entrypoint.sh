#!/bin/sh
# Runs the Lambda handler named by the command (module.function, as the stacks set it), or by SLEEPER_HANDLER
# (module:function, from sleeper.runtime.registry) when no command is given.
set -e
if [ "$#" -eq 0 ]; then
    if [ -z "${SLEEPER_HANDLER:-}" ]; then
        echo "no handler: pass module.function or set SLEEPER_HANDLER=module:function" >&2
        exit 2
    fi
    set -- "$(printf '%s' "$SLEEPER_HANDLER" | tr ':' '.')"
fi
exec /lambda-entrypoint.sh "$@"
