# `apply --force` deletes, then looks once (kubectl's default --timeout of 0) for the object to be gone before it
# creates it again. A Service placed on a cluster is held by its syncer's finalizer until the copy there is
# deleted (as kcp's syncers hold what they sync), so kcp's delete is not done at once: wait for it
s|kubectl apply -f hack/testdata/service-revision2.yaml --force "|kubectl apply -f hack/testdata/service-revision2.yaml --force --timeout=60s "|
# "no CRD exists": in kcp a workspace serves the kube types its SyncTargets import as CRDs (labelled
# `workload.kcp.io/imported: "true"`) and kcp's own SyncTargets, Locations and Placements: none but those
s|kube::test::get_object_assert crds "{{range.items}}{{${id_field:?}}}:{{end}}" ''|kube::test::get_object_assert "crds -l !workload.kcp.io/imported" "{{range.items}}{{${id_field:?}}}:{{end}}" 'locations.scheduling.kcp.io:placements.scheduling.kcp.io:synctargets.workload.kcp.io:'|
