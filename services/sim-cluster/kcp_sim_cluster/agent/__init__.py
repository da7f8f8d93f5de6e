"""kcp-sim-cluster's node agent: simulated Nodes and their pods' lifecycle on any Kubernetes API server.

It plays kubelets, as kwok does, through the Kubernetes API alone (kcpcommon's clients, informers and
controllers); it never imports the API server package, so it runs against a real kube-apiserver as
against a kcp-sim-cluster.
"""
