#!/usr/bin/env bash
# Runs kube's own kubectl integration tests (test/cmd/*.sh of kube's source tree, never copied here)
# against a server this project runs, with the adaptations kept beside this script (README.md says why):
#   rewrites/<script>.sed   sed programs applied to a scratch copy of test/cmd/<script>
#   rewrites/testdata/<file>.sed   the same for hack/testdata/<file>
#   rewrites/<target>/<script>.sed   then those of the target (KUBECMD_TARGET: sim or kcp)
#   env.sh                  variables set after kube's scripts are sourced
# Usage: run.sh KUBE_SRC KUBECONFIG KUBECTL RESULTS FUNCTION...
# Every assertion (kube::test::*assert*, if_has_string...) appends one line to RESULTS:
#   <function> TAB PASS|FAIL TAB <file:line> TAB <assertion and, when it failed, expected/got>
# and every function one line: <function> TAB DONE TAB <exit status> TAB <seconds it took>. A failed assertion stops its
# function as in kube (errexit), unless KUBECMD_KEEP_GOING=1 (then the rest is counted too).
set -o errexit -o nounset -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$1" && pwd); SERVER_KUBECONFIG=$2; KUBECTL_BINARY=$3; RESULTS=$4; shift 4
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kubecmd.XXXXXX")
trap 'rm -rf "${WORK}"' EXIT

# A scratch KUBE_ROOT: kube's tree by symlinks, test/cmd as rewritten copies
mkdir -p "${WORK}/root/test/cmd" "${WORK}/bin" "${WORK}/home"
for entry in "${SRC}"/*; do [[ "${entry##*/}" == test ]] || ln -s "${entry}" "${WORK}/root/${entry##*/}"; done
for entry in "${SRC}"/test/*; do [[ "${entry##*/}" == cmd ]] || ln -s "${entry}" "${WORK}/root/test/${entry##*/}"; done
for script in "${SRC}"/test/cmd/*.sh; do
  name=${script##*/}
  if [[ -f "${HERE}/rewrites/${name}.sed" ]]; then
    sed -f "${HERE}/rewrites/${name}.sed" "${script}" > "${WORK}/root/test/cmd/${name}"
  else
    cp "${script}" "${WORK}/root/test/cmd/${name}"
  fi
  # a target's own (rewrites/kcp/: what kcp shows by design, which a cluster does not)
  if [[ -n "${KUBECMD_TARGET:-}" && -f "${HERE}/rewrites/${KUBECMD_TARGET}/${name}.sed" ]]; then
    sed -i -f "${HERE}/rewrites/${KUBECMD_TARGET}/${name}.sed" "${WORK}/root/test/cmd/${name}"
  fi
done
# hack/testdata as a scratch copy (484 KB; kubectl reads a symlinked directory as a file), its files that name
# APIs kube has since removed rewritten (rewrites/testdata/<file>.sed); the rest of hack/ by symlinks
rm "${WORK}/root/hack" && mkdir -p "${WORK}/root/hack"
for entry in "${SRC}"/hack/*; do [[ "${entry##*/}" == testdata ]] || ln -s "${entry}" "${WORK}/root/hack/${entry##*/}"; done
cp -R "${SRC}/hack/testdata" "${WORK}/root/hack/testdata"
for rewrite in "${HERE}"/rewrites/testdata/*.sed; do
  file="${WORK}/root/hack/testdata/$(basename "${rewrite}" .sed)"
  sed -i -f "${rewrite}" "${file}"
done
[[ -x "${KUBECTL_BINARY}" && "${KUBECTL_BINARY}" == /* ]] || { echo "run.sh: ${KUBECTL_BINARY} is no absolute path to an executable" >&2; exit 2; }
ln -s "${KUBECTL_BINARY}" "${WORK}/bin/kubectl"
export PATH="${WORK}/bin:${PATH}" TERM=${TERM:-dumb}
cp "${SERVER_KUBECONFIG}" "${WORK}/kubeconfig"
export KUBECONFIG="${WORK}/kubeconfig"
cd "${WORK}/root"

# kube's entry point (hack/make-rules/test-cmd.sh) sources these three, then starts etcd and kube itself
KUBE_ROOT=$(pwd)
source "${KUBE_ROOT}/hack/lib/init.sh"
source "${KUBE_ROOT}/hack/lib/test.sh"
KUBE_JUNIT_REPORT_DIR="${WORK}/junit" source "${KUBE_ROOT}/test/cmd/legacy-script.sh" >/dev/null

# What kube's setup() and runTests() prepare, without starting or building anything: the field names
# and create_and_use_new_namespace are taken from runTests' own text
KUBE_TEMP="${WORK}/temp"; mkdir -p "${KUBE_TEMP}"; HOME="${WORK}/home"
# kube's ensure-gnu-sed (grep -q over `sed --help`) said "Failed to find GNU sed" once in CI, with GNU sed
# there; the same check made directly, saying what sed answered if it ever fails again
sed_version=$(LANG=C sed --version 2>&1 || true)
[[ "${sed_version}" == *GNU* ]] || { echo "run.sh: GNU sed is needed; sed --version said: ${sed_version}" >&2; exit 2; }
SED=sed
CONTEXT=$(kubectl config current-context)
SERVER=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
kube_flags=( '-s' "${SERVER}" )
kube_flags_without_token=( "${kube_flags[@]}" )
kube_flags_with_token=( "${kube_flags[@]}" )
eval "$(sed -n 's/^  \(export [a-z_0-9]*=.*\)$/\1/p' "${KUBE_ROOT}/test/cmd/legacy-script.sh")"
eval "$(sed -n '/^  create_and_use_new_namespace() {$/,/^  }$/p' "${KUBE_ROOT}/test/cmd/legacy-script.sh")"
SECURE_API_PORT=${SERVER##*:}
KUBECMD_TOKEN=$(kubectl config view --raw --minify -o jsonpath='{.users[0].user.token}')
source "${HERE}/env.sh"
# kube's harness creates Node 127.0.0.1 by hand (it runs no kubelet); so does this one, with its function
if [[ ${KUBECMD_CREATE_NODE:-} == 1 ]] && ! kubectl get node 127.0.0.1 >/dev/null 2>&1; then
  eval "$(sed -n '/^function create_node() {$/,/^__EOF__$/p' "${KUBE_ROOT}/hack/make-rules/test-cmd.sh"; echo '}')"
  create_node
  # as kube's controller-manager would have by the time its functions describe it (NodeStatusNeverUpdated)
  kubectl wait --for=condition=Ready=Unknown node/127.0.0.1 --timeout=60s >/dev/null
fi

# Each assertion helper of hack/lib/test.sh, wrapped to record its outcome
record_assertion() {
  local status=$1 what=$2 frame where=""
  for ((frame = 1; frame < ${#BASH_SOURCE[@]}; frame++)); do
    if [[ "${BASH_SOURCE[frame]}" == */test/cmd/* ]]; then
      where="${BASH_SOURCE[frame]##*/}:${BASH_LINENO[frame-1]}"; break
    fi
  done
  what=${what//$'\n'/ | }
  printf '%s\t%s\t%s\t%s\n' "${KUBECMD_FUNCTION}" "${status}" "${where}" "${what:0:600}" >> "${RESULTS}"
}
# an assertion's first three arguments, each cut to 120 characters (some are whole outputs)
kubecmd_args() {
  local arg out=""
  for arg in "${@:1:3}"; do out+="${arg:0:120}"; (( ${#arg} <= 120 )) || out+="..."; out+=" "; done
  printf '%s' "${out}"
}
for helper in get_object_assert wait_object_assert get_object_jsonpath_assert describe_object_assert \
    describe_object_events_assert describe_resource_assert describe_resource_events_assert if_has_string \
    if_has_not_string if_empty_string if_sort_by_has_correct_order version::diff_assert; do
  eval "$(declare -f "kube::test::${helper}" | sed "1s/^kube::test::${helper}/kubecmd_original_${helper//:/_}/")"
  eval "kube::test::${helper}() {
    local output status=0
    output=\$(kubecmd_original_${helper//:/_} \"\$@\" 2>&1) || status=\$?
    printf '%s\n' \"\${output}\"
    if [[ \${status} == 0 ]]; then
      record_assertion PASS \"${helper} \$(kubecmd_args \"\$@\")\"
    elif [[ ${helper} == if_* ]]; then
      return \${status}  # a predicate: kube's scripts also ask it in retry loops; used alone, errexit records it
    else
      KUBECMD_FAILED_ASSERTION=1
      record_assertion FAIL \"${helper} \$(kubecmd_args \"\$@\") => \$(grep -E 'Expected|Got|message:|has( not)?:' <<< \"\${output}\" | tr -s ' ' | tail -4)\"
      [[ \${KUBECMD_KEEP_GOING:-} == 1 ]] || return \${status}
    fi
  }"
done

# A command that fails outside an assertion ends the function too (errexit): record which one (not the
# failures inside command substitutions, which errexit does not act on)
record_error() {
  [[ ${BASHPID} == "${KUBECMD_PID}" ]] || return 0
  [[ -n ${KUBECMD_FAILED_ASSERTION:-} ]] || record_assertion FAIL "command failed ($1): $2"
  KUBECMD_FAILED_ASSERTION=1
}

status=0
for function in "$@"; do
  KUBECMD_FUNCTION=${function}
  echo "=== ${function} (kubectl $(kubectl version --client -o json | sed -n 's/.*"gitVersion": "\(.*\)".*/\1/p'))"
  started=${SECONDS}
  set +o errexit
  ( set -o errexit; KUBECMD_PID=${BASHPID}; trap 'record_error $? "${BASH_COMMAND}"' ERR; "${function}" )
  code=$?
  set -o errexit
  # an explicit `exit 1` of kube's script (a check written without an assertion helper)
  if [[ ${code} != 0 ]] && [[ $(tail -1 "${RESULTS}") != "${function}"$'\t'FAIL* ]]; then
    record_assertion FAIL "exited ${code} outside an assertion (see the log)"
  fi
  printf '%s\tDONE\t%s\t%s s\n' "${function}" "${code}" "$((SECONDS - started))" >> "${RESULTS}"
  [[ ${code} == 0 ]] || status=1
done
exit "${status}"
