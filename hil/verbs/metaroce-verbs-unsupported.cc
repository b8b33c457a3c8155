/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Entry points of libibverbs that metaroce0 does not offer: each returns the documented
// error (an errno value, or NULL / -1 with errno) and logs one line the first time.
//
// The IBVERBS_PRIVATE_34 symbols at the end are rdma-core's interface to its provider
// libraries. Debian's perftest binaries link libmlx5 and libefa directly, and those import
// these symbols: the dynamic loader refuses a libibverbs.so.1 without them. The provider
// libraries register themselves at load time (verbs_register_driver_34), which we accept and
// ignore: metaroce0 is the only device, so no provider is ever asked to open one, and every
// other private entry point fails with EOPNOTSUPP. See docs/verbs.md.

#include "metaroce-verbs-objects.h"

#include <cerrno>
#include <infiniband/verbs.h>

#undef ibv_reg_mr

using metaroce::verbs::LogUnsupported;

namespace
{

/// Log \p name once and set errno. \return nullptr
template <typename T>
T*
NullWithErrno(const char* name)
{
    LogUnsupported(name);
    errno = EOPNOTSUPP;
    return nullptr;
}

/// Log \p name once. \return EOPNOTSUPP
int
NotSupported(const char* name)
{
    LogUnsupported(name);
    return EOPNOTSUPP;
}

} // namespace

extern "C"
{
    ibv_ah* ibv_create_ah(ibv_pd*, ibv_ah_attr*)
    {
        return NullWithErrno<ibv_ah>("ibv_create_ah (UD QPs)");
    }

    ibv_ah* ibv_create_ah_from_wc(ibv_pd*, ibv_wc*, ibv_grh*, uint8_t)
    {
        return NullWithErrno<ibv_ah>("ibv_create_ah_from_wc (UD QPs)");
    }

    int ibv_init_ah_from_wc(ibv_context*, uint8_t, ibv_wc*, ibv_grh*, ibv_ah_attr*)
    {
        return NotSupported("ibv_init_ah_from_wc (UD QPs)");
    }

    int ibv_destroy_ah(ibv_ah*)
    {
        return NotSupported("ibv_destroy_ah (UD QPs)");
    }

    int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t)
    {
        return NotSupported("ibv_attach_mcast");
    }

    int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t)
    {
        return NotSupported("ibv_detach_mcast");
    }

    ibv_srq* ibv_create_srq(ibv_pd*, ibv_srq_init_attr*)
    {
        return NullWithErrno<ibv_srq>("ibv_create_srq");
    }

    int ibv_modify_srq(ibv_srq*, ibv_srq_attr*, int)
    {
        return NotSupported("ibv_modify_srq");
    }

    int ibv_query_srq(ibv_srq*, ibv_srq_attr*)
    {
        return NotSupported("ibv_query_srq");
    }

    int ibv_destroy_srq(ibv_srq*)
    {
        return NotSupported("ibv_destroy_srq");
    }

    int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, size_t, int)
    {
        LogUnsupported("ibv_rereg_mr");
        errno = EOPNOTSUPP;
        return IBV_REREG_MR_ERR_INPUT; // the old region stays valid
    }

    ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int)
    {
        return NullWithErrno<ibv_mr>("ibv_reg_dmabuf_mr");
    }

    ibv_context* ibv_import_device(int)
    {
        return NullWithErrno<ibv_context>("ibv_import_device");
    }

    ibv_pd* ibv_import_pd(ibv_context*, uint32_t)
    {
        return NullWithErrno<ibv_pd>("ibv_import_pd");
    }

    void ibv_unimport_pd(ibv_pd*)
    {
        LogUnsupported("ibv_unimport_pd");
    }

    ibv_mr* ibv_import_mr(ibv_pd*, uint32_t)
    {
        return NullWithErrno<ibv_mr>("ibv_import_mr");
    }

    void ibv_unimport_mr(ibv_mr*)
    {
        LogUnsupported("ibv_unimport_mr");
    }

    ibv_dm* ibv_import_dm(ibv_context*, uint32_t)
    {
        return NullWithErrno<ibv_dm>("ibv_import_dm");
    }

    void ibv_unimport_dm(ibv_dm*)
    {
        LogUnsupported("ibv_unimport_dm");
    }

    int ibv_set_ece(ibv_qp*, ibv_ece*)
    {
        return NotSupported("ibv_set_ece");
    }

    int ibv_query_ece(ibv_qp*, ibv_ece*)
    {
        return NotSupported("ibv_query_ece");
    }

    int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t)
    {
        return 0; // MetaRoCE places data out of order; no guarantee is given for either
    }

    int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t*, uint16_t*)
    {
        return NotSupported("ibv_resolve_eth_l2_from_gid");
    }

    // Kernel-ABI conversion helpers (IBVERBS_1.0), used with the kernel's ucma / uverbs
    // structures, which this library never exchanges.
    void ibv_copy_qp_attr_from_kern(void*, void*)
    {
        LogUnsupported("ibv_copy_qp_attr_from_kern");
    }

    void ibv_copy_ah_attr_from_kern(void*, void*)
    {
        LogUnsupported("ibv_copy_ah_attr_from_kern");
    }

    void ibv_copy_path_rec_from_kern(void*, void*)
    {
        LogUnsupported("ibv_copy_path_rec_from_kern");
    }

    void ibv_copy_path_rec_to_kern(void*, void*)
    {
        LogUnsupported("ibv_copy_path_rec_to_kern");
    }

    // ---- IBVERBS_PRIVATE_34: the provider interface (see the file comment) ----

    void verbs_register_driver_34(const void* /*ops*/)
    {
        // A provider library loaded by the program: ignored, metaroce0 is the only device.
    }

    void* _verbs_init_and_alloc_context(void*, int, size_t, void*, uint32_t)
    {
        return NullWithErrno<void>("_verbs_init_and_alloc_context (rdma-core provider API)");
    }

    void verbs_uninit_context(void*)
    {
    }

    void verbs_set_ops(void*, const void*)
    {
    }

    void verbs_init_cq(void*, void*, void*, void*)
    {
    }

    int verbs_open_device(void*, void*)
    {
        return NotSupported("verbs_open_device (rdma-core provider API)");
    }

    bool verbs_allow_disassociate_destroy = false;

    void __verbs_log(void*, const char*, ...)
    {
    }

    unsigned int __ioctl_final_num_attrs(unsigned int num, void*)
    {
        return num;
    }

    int ibv_read_ibdev_sysfs_file(char*, size_t, void*, const char*, ...)
    {
        errno = ENOENT;
        return -1;
    }

#define METAROCE_PRIVATE_CMD(name)                                                                 \
    int name()                                                                                     \
    {                                                                                              \
        return NotSupported(#name " (rdma-core provider API)");                                    \
    }

    METAROCE_PRIVATE_CMD(execute_ioctl)
    METAROCE_PRIVATE_CMD(ibv_cmd_advise_mr)
    METAROCE_PRIVATE_CMD(ibv_cmd_alloc_dm)
    METAROCE_PRIVATE_CMD(ibv_cmd_alloc_mw)
    METAROCE_PRIVATE_CMD(ibv_cmd_alloc_pd)
    METAROCE_PRIVATE_CMD(ibv_cmd_attach_mcast)
    METAROCE_PRIVATE_CMD(ibv_cmd_close_xrcd)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_ah)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_counters)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_cq)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_cq_ex)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_flow)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_flow_action_esp)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_qp)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_qp_ex)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_qp_ex2)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_rwq_ind_table)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_srq)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_srq_ex)
    METAROCE_PRIVATE_CMD(ibv_cmd_create_wq)
    METAROCE_PRIVATE_CMD(ibv_cmd_dealloc_mw)
    METAROCE_PRIVATE_CMD(ibv_cmd_dealloc_pd)
    METAROCE_PRIVATE_CMD(ibv_cmd_dereg_mr)
    METAROCE_PRIVATE_CMD(ibv_cmd_destroy_ah)
    METAROCE_PRIVATE_CMD(ibv_cmd_destroy_counters)
    METAROCE_PRIVATE_CMD(ibv_cmd_destroy_cq)
    METAROCE_PRIVATE_CMD(ibv_cmd_destroy_flow)
    METAROCE_PRIVATE_CMD(ibv_cmd_destroy_flow_action)
    METAROCE_PRIVATE_CMD(ibv_cmd_destroy_qp)
    METAROCE_PRIVATE_CMD(ibv_cmd_destroy_rwq_ind_table)
    METAROCE_PRIVATE_CMD(ibv_cmd_destroy_srq)
    METAROCE_PRIVATE_CMD(ibv_cmd_destroy_wq)
    METAROCE_PRIVATE_CMD(ibv_cmd_detach_mcast)
    METAROCE_PRIVATE_CMD(ibv_cmd_free_dm)
    METAROCE_PRIVATE_CMD(ibv_cmd_get_context)
    METAROCE_PRIVATE_CMD(ibv_cmd_modify_cq)
    METAROCE_PRIVATE_CMD(ibv_cmd_modify_flow_action_esp)
    METAROCE_PRIVATE_CMD(ibv_cmd_modify_qp)
    METAROCE_PRIVATE_CMD(ibv_cmd_modify_qp_ex)
    METAROCE_PRIVATE_CMD(ibv_cmd_modify_srq)
    METAROCE_PRIVATE_CMD(ibv_cmd_modify_wq)
    METAROCE_PRIVATE_CMD(ibv_cmd_open_qp)
    METAROCE_PRIVATE_CMD(ibv_cmd_open_xrcd)
    METAROCE_PRIVATE_CMD(ibv_cmd_poll_cq)
    METAROCE_PRIVATE_CMD(ibv_cmd_post_recv)
    METAROCE_PRIVATE_CMD(ibv_cmd_post_send)
    METAROCE_PRIVATE_CMD(ibv_cmd_post_srq_recv)
    METAROCE_PRIVATE_CMD(ibv_cmd_query_context)
    METAROCE_PRIVATE_CMD(ibv_cmd_query_device_any)
    METAROCE_PRIVATE_CMD(ibv_cmd_query_mr)
    METAROCE_PRIVATE_CMD(ibv_cmd_query_port)
    METAROCE_PRIVATE_CMD(ibv_cmd_query_qp)
    METAROCE_PRIVATE_CMD(ibv_cmd_query_srq)
    METAROCE_PRIVATE_CMD(ibv_cmd_read_counters)
    METAROCE_PRIVATE_CMD(ibv_cmd_reg_dmabuf_mr)
    METAROCE_PRIVATE_CMD(ibv_cmd_reg_dm_mr)
    METAROCE_PRIVATE_CMD(ibv_cmd_reg_mr)
    METAROCE_PRIVATE_CMD(ibv_cmd_req_notify_cq)
    METAROCE_PRIVATE_CMD(ibv_cmd_rereg_mr)
    METAROCE_PRIVATE_CMD(ibv_cmd_resize_cq)

} // extern "C"
