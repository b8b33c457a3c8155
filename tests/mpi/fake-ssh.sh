#!/bin/sh
# Stands in for ssh in a dry run of a multi-machine launch on one machine (tests/mpi,
# docs/distributed.md): OpenMPI's rsh launcher calls "<agent> [options] <host> <command>" to
# start its daemon (orted) on each host of the hostfile; this drops the options and the host
# name and runs the command here, as ssh would run it on that host.
while [ $# -gt 0 ]; do
    case "$1" in
        -*) shift ;;
        *) break ;;
    esac
done
if [ $# -lt 2 ]; then
    echo "fake-ssh.sh: usage: fake-ssh.sh [options] HOST COMMAND..." >&2
    exit 255
fi
host="$1"
shift
# Each host has a /tmp and a /dev/shm of its own: the daemons and ranks of the fake hosts would
# otherwise race for the same OpenMPI session directories and shared-memory segment files,
# which are named after this machine and the rank's place on its host.
OMPI_MCA_orte_tmpdir_base="${TMPDIR:-/tmp}/metaroce-fake-hosts/$host"
OMPI_MCA_btl_vader_backing_directory="$OMPI_MCA_orte_tmpdir_base"
mkdir -p "$OMPI_MCA_orte_tmpdir_base" || exit 255
export OMPI_MCA_orte_tmpdir_base OMPI_MCA_btl_vader_backing_directory
exec /bin/sh -c "$*"
