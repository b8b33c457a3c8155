/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/*
 * XDP program of the AF_XDP raw-port backend (hil/metaroce-hil-xdp.cc): IPv4/UDP datagrams to
 * the data port (config[0]), unfragmented, go to the AF_XDP socket of their receive queue;
 * everything else (ARP, the TCP control plane, other traffic) goes on to the kernel's stack.
 * Built with clang -target bpf and embedded in the daemon. Two entry points with one body:
 * metaroce_xsk_filter for generic (SKB) XDP and for drivers whose MTU fits a page, and
 * metaroce_xsk_filter_frags (xdp.frags) for native XDP on a link with a larger MTU, which a
 * driver such as veth refuses to a program that cannot see multi-buffer frames; the port loads
 * only the one it attaches. Only the first buffer is read. Whether a multi-buffer frame then
 * reaches the socket (which does not ask for them) depends on the kernel: whole in copy mode on
 * recent kernels, refused on older ones (docs/hil.md, "AF_XDP").
 */

// The kernel's types first: the libbpf headers use them.
#include <linux/bpf.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

struct
{
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsks_map SEC(".maps");

struct
{
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} config SEC(".maps");

static __always_inline int
filter(struct xdp_md* ctx)
{
    void* data = (void*)(long)ctx->data;
    void* end = (void*)(long)ctx->data_end;
    struct ethhdr* eth = data;
    if ((void*)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
    {
        return XDP_PASS;
    }
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > end || ip->protocol != IPPROTO_UDP ||
        (ip->frag_off & bpf_htons(0x3fff)) != 0 || ip->ihl < 5)
    {
        return XDP_PASS;
    }
    struct udphdr* udp = (void*)ip + ip->ihl * 4;
    if ((void*)(udp + 1) > end)
    {
        return XDP_PASS;
    }
    __u32 key = 0;
    __u32* port = bpf_map_lookup_elem(&config, &key);
    if (!port || udp->dest != bpf_htons((__u16)*port))
    {
        return XDP_PASS;
    }
    return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

SEC("xdp")
int
metaroce_xsk_filter(struct xdp_md* ctx)
{
    return filter(ctx);
}

SEC("xdp.frags")
int
metaroce_xsk_filter_frags(struct xdp_md* ctx)
{
    return filter(ctx);
}

char LICENSE[] SEC("license") = "GPL";
