#!/bin/sh
# devcontainer feature "taosync": install a pinned taosync in a venv of its own and the
# lifecycle command `taosync-devcontainer` (postCreateCommand / postStartCommand).
#
# The feature's options arrive as environment variables, as the devcontainer feature
# spec passes them: VERSION, PACKAGE, FLEET, APPLY, ONLY, VERIFY. Two more are for tests
# and image builds only (never set by the devcontainer CLI): TAOSYNC_FEATURE_PREFIX (where
# the venv and settings go, default /usr/local/share/taosync-devcontainer) and
# TAOSYNC_FEATURE_BIN (where the commands are linked, default /usr/local/bin).
#
# Nothing of the host is mounted: the key is read at apply time from the container's
# environment (a Codespaces/devcontainer secret, or remoteEnv: ${localEnv:NAME}), as
# fleet.yaml's gateway.key: ${env:NAME} names it.
set -eu

VERSION="${VERSION:-0.1.0}"
REPOSITORY="git+https://github.com/OWNER/taosync.git"  # taosync is not on PyPI
PACKAGE="${PACKAGE:-}"
FLEET="${FLEET:-.devcontainer/fleet.yaml}"
APPLY="${APPLY:-start}"
ONLY="${ONLY:-}"
VERIFY="${VERIFY:-false}"
PREFIX="${TAOSYNC_FEATURE_PREFIX:-/usr/local/share/taosync-devcontainer}"
BIN="${TAOSYNC_FEATURE_BIN:-/usr/local/bin}"

case "$APPLY" in start|create|never) ;; *)
    echo "taosync feature: apply must be start, create or never (got '$APPLY')" >&2; exit 2;;
esac
case "$VERIFY" in true|false) ;; *)
    echo "taosync feature: verify must be true or false (got '$VERIFY')" >&2; exit 2;;
esac

python_ok() {
    command -v python3 >/dev/null 2>&1 &&
        python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}
if ! python_ok; then
    echo "taosync feature: installing Python 3 (taosync needs 3.11 or newer)"
    if command -v apt-get >/dev/null 2>&1; then
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends python3 python3-venv ca-certificates
    elif command -v apk >/dev/null 2>&1; then
        apk add --no-cache python3 py3-pip
    elif command -v dnf >/dev/null 2>&1; then
        dnf install -y python3
    fi
    python_ok || { echo "taosync feature: no Python 3.11+ with venv here; add the python feature first" >&2; exit 1; }
fi

if [ -n "$PACKAGE" ]; then
    SPEC="$PACKAGE"
elif [ "$VERSION" = "latest" ]; then
    SPEC="$REPOSITORY"
else
    SPEC="$REPOSITORY@v$VERSION"
fi
case "$SPEC" in git+*)
    if ! command -v git >/dev/null 2>&1; then
        if command -v apt-get >/dev/null 2>&1; then
            apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends git
        elif command -v apk >/dev/null 2>&1; then
            apk add --no-cache git
        fi
    fi;;
esac

umask 022  # the venv and the command are every user's: lifecycle commands run as remoteUser
mkdir -p "$PREFIX" "$BIN"
python3 -m venv "$PREFIX/venv"
"$PREFIX/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$SPEC"

# the options the lifecycle command needs (it gets no environment from the feature)
{
    printf 'FLEET=%s\n' "$(printf '%s' "$FLEET" | sed "s/'/'\\\\''/g; s/^/'/; s/\$/'/")"
    printf 'APPLY=%s\n' "$APPLY"
    printf 'ONLY=%s\n' "$(printf '%s' "$ONLY" | sed "s/'/'\\\\''/g; s/^/'/; s/\$/'/")"
    printf 'VERIFY=%s\n' "$VERIFY"
} > "$PREFIX/options.sh"

cat > "$PREFIX/lifecycle.sh" <<'SCRIPT'
#!/bin/sh
# taosync-devcontainer create|start: the feature's postCreateCommand / postStartCommand.
# Runs `taosync apply` on the workspace's fleet when the feature's `apply` option says
# this stage; as the container's user, in its own HOME. A second start with nothing
# changed is a no-op ("nothing to do"); a missing key or a bad fleet fails with
# taosync's located message and writes nothing.
set -eu
here=$(dirname "$(readlink -f "$0")")
. "$here/options.sh"
stage="${1:-start}"
case "$APPLY" in
    never) exit 0;;
    create) [ "$stage" = create ] || exit 0;;
    start) [ "$stage" = start ] || exit 0;;  # postStart also follows the first create
esac
workspace="${TAOSYNC_WORKSPACE:-$PWD}"  # lifecycle commands run in the workspace folder
case "$FLEET" in /*) fleet="$FLEET";; *) fleet="$workspace/$FLEET";; esac
if [ ! -f "$fleet" ]; then
    echo "taosync: no fleet at $fleet (the feature's fleet option); nothing applied" >&2
    exit 0
fi
set -- -c "$fleet" apply --yes
[ -n "$ONLY" ] && for c in $(printf '%s' "$ONLY" | tr ',' ' '); do set -- "$@" --only "$c"; done
[ "$VERIFY" = true ] || set -- "$@" --no-verify
exec "$here/venv/bin/taosync" "$@"
SCRIPT
chmod 0755 "$PREFIX/lifecycle.sh"
ln -sf "$PREFIX/venv/bin/taosync" "$BIN/taosync"
ln -sf "$PREFIX/lifecycle.sh" "$BIN/taosync-devcontainer"
echo "taosync feature: installed $("$PREFIX/venv/bin/taosync" --version 2>/dev/null || echo "$SPEC"); apply on $APPLY from $FLEET"
