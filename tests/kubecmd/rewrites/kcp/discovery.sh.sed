# every label value of `get all -l app=cassandra`: in kcp the pods mirrored up from a cluster carry their state label
# (`state.workload.kcp.io/<target>: Upsync`, as kcp marks them) and the RC and Service the namespace rule placed carry
# their assignment (`workloads.kcp.io/cluster: <target>`, one of the fleet's `old` and `new`)
s/'(cassandra:){2}(cassandra:(cassandra::?)?)?'/'(cassandra:Upsync:){0,2}cassandra:(old|new):cassandra:(old|new)::?'/
