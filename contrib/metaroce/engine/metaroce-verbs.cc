/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-verbs.h"

namespace metaroce
{

const char*
WcStatusName(WcStatus status)
{
    switch (status)
    {
    case WcStatus::SUCCESS:
        return "SUCCESS";
    case WcStatus::LOC_LEN_ERR:
        return "LOC_LEN_ERR";
    case WcStatus::LOC_PROT_ERR:
        return "LOC_PROT_ERR";
    case WcStatus::WR_FLUSH_ERR:
        return "WR_FLUSH_ERR";
    case WcStatus::REM_INV_REQ_ERR:
        return "REM_INV_REQ_ERR";
    case WcStatus::REM_ACCESS_ERR:
        return "REM_ACCESS_ERR";
    case WcStatus::REM_OP_ERR:
        return "REM_OP_ERR";
    case WcStatus::RETRY_EXC_ERR:
        return "RETRY_EXC_ERR";
    case WcStatus::RNR_RETRY_EXC_ERR:
        return "RNR_RETRY_EXC_ERR";
    case WcStatus::GENERAL_ERR:
        return "GENERAL_ERR";
    }
    return "UNKNOWN";
}

const char*
WrOpcodeName(WrOpcode op)
{
    switch (op)
    {
    case WrOpcode::RDMA_WRITE:
        return "RDMA_WRITE";
    case WrOpcode::RDMA_WRITE_WITH_IMM:
        return "RDMA_WRITE_WITH_IMM";
    case WrOpcode::SEND:
        return "SEND";
    case WrOpcode::SEND_WITH_IMM:
        return "SEND_WITH_IMM";
    case WrOpcode::RDMA_READ:
        return "RDMA_READ";
    case WrOpcode::ATOMIC_CMP_AND_SWP:
        return "ATOMIC_CMP_AND_SWP";
    case WrOpcode::ATOMIC_FETCH_AND_ADD:
        return "ATOMIC_FETCH_AND_ADD";
    }
    return "UNKNOWN";
}

const char*
PostStatusName(PostStatus status)
{
    switch (status)
    {
    case PostStatus::OK:
        return "OK";
    case PostStatus::INVALID_CONNECTION:
        return "INVALID_CONNECTION";
    case PostStatus::NOT_CONNECTED:
        return "NOT_CONNECTED";
    case PostStatus::CONNECTION_ERROR:
        return "CONNECTION_ERROR";
    case PostStatus::INVALID_STREAM:
        return "INVALID_STREAM";
    case PostStatus::INVALID_LKEY:
        return "INVALID_LKEY";
    case PostStatus::NO_PERMISSION:
        return "NO_PERMISSION";
    case PostStatus::TOO_LONG:
        return "TOO_LONG";
    case PostStatus::QUEUE_FULL:
        return "QUEUE_FULL";
    case PostStatus::INVALID_ARGUMENT:
        return "INVALID_ARGUMENT";
    case PostStatus::NOT_SUPPORTED:
        return "NOT_SUPPORTED";
    }
    return "UNKNOWN";
}

} // namespace metaroce
