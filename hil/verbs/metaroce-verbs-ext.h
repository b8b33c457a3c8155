/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_VERBS_EXT_H
#define METAROCE_VERBS_EXT_H

#include <infiniband/verbs.h>
#include <stdint.h>

/**
 * \file
 * The MetaRoCE extension API of the drop-in libibverbs (docs/verbs.md): what plain Verbs has
 * no words for, the transport and the multipath settings of a QP, and the state of its paths.
 * A C header; the symbols have the version node METAROCE_VERBS_1.0. A program that uses it
 * links to our libibverbs.so.1 (it has no meaning with rdma-core's).
 */

#ifdef __cplusplus
extern "C"
{
#endif

    /// Transports of metaroce_verbs_qp_attr::transport.
    enum metaroce_verbs_transport
    {
        METAROCE_VERBS_TRANSPORT_METAROCE = 0, ///< loss-tolerant multipath (the default)
        METAROCE_VERBS_TRANSPORT_ROCEV2 = 1,   ///< go-back-N RoCEv2 with DCQCN
    };

    /// Fields of metaroce_verbs_qp_attr that are set.
    enum metaroce_verbs_qp_attr_mask
    {
        METAROCE_VERBS_QP_ATTR_TRANSPORT = 1 << 0,        ///< transport is set
        METAROCE_VERBS_QP_ATTR_NUM_PATHS = 1 << 1,        ///< num_paths is set
        METAROCE_VERBS_QP_ATTR_SOURCE_PORT_BASE = 1 << 2, ///< source_port_base is set
    };

    /// Per-QP settings that override the METAROCE_VERBS_* environment.
    struct metaroce_verbs_qp_attr
    {
        uint32_t comp_mask;        ///< metaroce_verbs_qp_attr_mask bits
        uint32_t transport;        ///< metaroce_verbs_transport
        uint32_t num_paths;        ///< MetaRoCE paths (UDP source ports), 1..128
        uint16_t source_port_base; ///< first UDP source port of the paths (0: the engine's)
    };

    /// The device's settings as the library read them.
    struct metaroce_verbs_device_info
    {
        char ifname[16];     ///< interface the device sits on
        uint32_t ipv4;       ///< its address, network byte order
        uint32_t transport;  ///< default transport of new QPs (metaroce_verbs_transport)
        uint32_t num_paths;  ///< default MetaRoCE paths of new QPs
        uint16_t udp_port;   ///< data port
        uint32_t active_mtu; ///< engine MTU, bytes
        double loss;         ///< fault wrapper drop probability (METAROCE_VERBS_LOSS)
    };

    /// State of one path of a QP.
    struct metaroce_verbs_path_info
    {
        uint32_t path_id;     ///< index
        uint16_t source_port; ///< UDP source port (ECMP entropy)
        uint8_t failed;       ///< the engine declared the path failed
        double window;        ///< congestion window, packets
        double srtt_us;       ///< smoothed RTT, microseconds (negative: no sample)
    };

    /// Engine counters of a QP (a subset of the engine's counters enum).
    struct metaroce_verbs_qp_counters
    {
        uint64_t data_packets_sent;     ///< data packets transmitted (first copies and resends)
        uint64_t retransmitted;         ///< of which retransmissions
        uint64_t data_packets_received; ///< data packets accepted
    };

    /**
     * Create an RC QP as ibv_create_qp() does, with \p attr overriding the environment.
     * \return the QP, or NULL with errno (EINVAL for a bad attribute)
     */
    struct ibv_qp* metaroce_verbs_create_qp(struct ibv_pd* pd,
                                            struct ibv_qp_init_attr* init_attr,
                                            const struct metaroce_verbs_qp_attr* attr);

    /// \return 0 and \p info of the device of \p context, or EINVAL if it is not metaroce0.
    int metaroce_verbs_query_device(struct ibv_context* context,
                                    struct metaroce_verbs_device_info* info);

    /**
     * Read the paths of \p qp into \p paths (at most \p max).
     * \return the number of paths the QP has (may exceed \p max), or -1 with errno
     */
    int metaroce_verbs_query_paths(struct ibv_qp* qp,
                                   struct metaroce_verbs_path_info* paths,
                                   uint32_t max);

    /// \return 0 and the engine counters of \p qp, or EINVAL.
    int metaroce_verbs_query_counters(struct ibv_qp* qp, struct metaroce_verbs_qp_counters* out);

#ifdef __cplusplus
}
#endif

#endif // METAROCE_VERBS_EXT_H
