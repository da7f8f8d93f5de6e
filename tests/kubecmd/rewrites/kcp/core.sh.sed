# kcp marks every object with its logical cluster (the `kcp.io/cluster` annotation, as kcp does), and the namespace
# rule marks what it placed on the namespace's cluster (`splitter.kcp.io/namespace-placed`); the user's annotation
# must be there as on a cluster, beside exactly these
s|"map\\\[zone-context:home\\\]"|"map\\[kcp.io/cluster:admin splitter.kcp.io/namespace-placed:true zone-context:home\\]"|
s|"map\\\[zone-context:work\\\]"|"map\\[kcp.io/cluster:admin splitter.kcp.io/namespace-placed:true zone-context:work\\]"|
