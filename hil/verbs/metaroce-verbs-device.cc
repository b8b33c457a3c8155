/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The device, context and query entry points of the drop-in libibverbs: one device,
// metaroce0, with one Ethernet (RoCE) port whose GID table holds the IPv4-mapped address of
// the chosen interface.

#include "metaroce-hil-log.h"
#include "metaroce-verbs-objects.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <unordered_set>

#undef ibv_query_port
#undef ibv_get_device_list
#undef ibv_reg_mr

using namespace metaroce;
using namespace metaroce::verbs;

namespace metaroce
{
namespace verbs
{

void
SetupLogging(const std::string& level)
{
    static std::once_flag once;
    std::call_once(once, [&level]() {
        auto logger = spdlog::get("metaroce-verbs");
        if (!logger)
        {
            logger = spdlog::stderr_logger_mt("metaroce-verbs");
        }
        logger->set_pattern("metaroce-verbs: [%l] %v");
        logger->set_level(spdlog::level::from_str(level));
        logger->flush_on(spdlog::level::trace);
        spdlog::set_default_logger(logger);
    });
}

void
LogUnsupported(const char* name)
{
    static std::mutex mutex;
    static std::unordered_set<std::string> logged;
    std::lock_guard<std::mutex> lock(mutex);
    if (logged.insert(name).second)
    {
        spdlog::warn("{}: not supported by metaroce0 (docs/verbs.md)", name);
    }
}

} // namespace verbs
} // namespace metaroce

namespace
{

/// The one device and what was found when the list was made.
struct DeviceState
{
    ibv_device device{}; //!< what the application sees
    VerbsConfig cfg;     //!< settings at ibv_get_device_list
    InterfaceInfo iface; //!< the interface
    bool valid{false};   //!< a list was made
};

std::mutex g_deviceMutex; //!< guards g_device
DeviceState g_device;     //!< the device

constexpr uint32_t VENDOR_ID = 0x1d1d1d; //!< not a registered OUI: a software device
constexpr uint32_t VENDOR_PART_ID = 17;  //!< issue 17
constexpr uint16_t DEFAULT_PKEY = 0xffff;

/// \return the node GUID: the EUI-64 of the interface MAC, as RoCE NICs derive it.
uint64_t
NodeGuid(const InterfaceInfo& iface)
{
    const uint8_t* m = iface.mac.bytes;
    uint8_t eui[8] = {uint8_t(m[0] ^ 2), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
    uint64_t guid = 0;
    std::memcpy(&guid, eui, sizeof(guid)); // network order, as ibv_get_device_guid returns it
    return guid;
}

/// \return the enum value of \p bytes.
ibv_mtu
MtuEnum(uint32_t bytes)
{
    switch (bytes)
    {
    case 256:
        return IBV_MTU_256;
    case 512:
        return IBV_MTU_512;
    case 1024:
        return IBV_MTU_1024;
    case 2048:
        return IBV_MTU_2048;
    default:
        return IBV_MTU_4096;
    }
}

/// \return the GID of \p ip: ::ffff:a.b.c.d.
ibv_gid
MappedGid(uint32_t ip)
{
    ibv_gid gid{};
    gid.raw[10] = 0xff;
    gid.raw[11] = 0xff;
    uint32_t be = htonl(ip);
    std::memcpy(&gid.raw[12], &be, 4);
    return gid;
}

int
QueryDeviceAttr(ibv_context* ctx, ibv_device_attr* attr)
{
    Context* c = ToContext(ctx);
    std::memset(attr, 0, sizeof(*attr));
    std::snprintf(attr->fw_ver, sizeof(attr->fw_ver), "metaroce-ns3 engine");
    attr->node_guid = NodeGuid(c->runtime->Interface());
    attr->sys_image_guid = attr->node_guid;
    attr->max_mr_size = 1ull << 40;
    attr->page_size_cap = 0xfffff000;
    attr->vendor_id = VENDOR_ID;
    attr->vendor_part_id = VENDOR_PART_ID;
    attr->hw_ver = 1;
    attr->max_qp = 1 << 16;
    attr->max_qp_wr = 1024; // the engine's maxOutstandingWrs and maxPostedRecvs
    attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
    attr->max_sge = 1;
    attr->max_sge_rd = 1;
    attr->max_cq = 1 << 16;
    attr->max_cqe = 1 << 20;
    attr->max_mr = 1 << 20;
    attr->max_pd = 1 << 16;
    // Both transports have RDMA READ and atomics, 16 outstanding per QP (the engines'
    // maxRdAtomic default; ConnectX reports 16).
    attr->max_qp_rd_atom = 16;
    attr->max_qp_init_rd_atom = 16;
    attr->max_res_rd_atom = 16 << 16;
    attr->atomic_cap = IBV_ATOMIC_HCA;
    attr->max_pkeys = 1;
    attr->local_ca_ack_delay = 16;
    attr->phys_port_cnt = 1;
    return 0;
}

int
QueryDeviceEx(ibv_context* ctx,
              const ibv_query_device_ex_input* input,
              ibv_device_attr_ex* attr,
              size_t attrSize)
{
    if (input && input->comp_mask)
    {
        return EINVAL;
    }
    if (attrSize < sizeof(attr->orig_attr))
    {
        return EINVAL;
    }
    std::memset(attr, 0, std::min(attrSize, sizeof(*attr)));
    QueryDeviceAttr(ctx, &attr->orig_attr);
    if (vext_field_avail(ibv_device_attr_ex, phys_port_cnt_ex, attrSize))
    {
        attr->phys_port_cnt_ex = 1;
    }
    return 0;
}

int
QueryPortAttr(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t attrSize)
{
    if (port != 1)
    {
        return EINVAL;
    }
    Context* c = ToContext(ctx);
    InterfaceInfo now = c->runtime->Interface();
    std::string why;
    FindInterface(c->runtime->Config(), now, why); // link state as of now
    ibv_port_attr a{};
    a.state = now.running ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    a.max_mtu = IBV_MTU_4096;
    a.active_mtu = MtuEnum(c->runtime->Mtu());
    a.gid_tbl_len = 1;
    a.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
    a.max_msg_sz = 1u << 30; // the engine's maxMessageSize
    a.pkey_tbl_len = 1;
    a.lid = 0;
    a.sm_lid = 0;
    a.lmc = 0;
    a.max_vl_num = 1;
    a.active_width = 2;                 // 4X
    a.active_speed = 32;                // EDR: 4X EDR = 100 Gb/s, the engine's line rate
    a.phys_state = now.running ? 5 : 3; // LinkUp : Disabled
    a.link_layer = IBV_LINK_LAYER_ETHERNET;
    std::memcpy(attr, &a, std::min(attrSize, sizeof(a)));
    return 0;
}

int
QueryGidEntry(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry* entry)
{
    if (port != 1 || index != 0)
    {
        return EINVAL;
    }
    Context* c = ToContext(ctx);
    std::memset(entry, 0, sizeof(*entry));
    entry->gid = MappedGid(c->runtime->Interface().ip);
    entry->gid_index = 0;
    entry->port_num = 1;
    entry->gid_type = IBV_GID_TYPE_ROCE_V2;
    entry->ndev_ifindex = 0;
    return 0;
}

} // namespace

extern "C"
{
    ibv_device** ibv_get_device_list(int* numDevices)
    {
        std::lock_guard<std::mutex> lock(g_deviceMutex);
        VerbsConfig cfg;
        std::string why;
        if (!LoadConfig(cfg, why))
        {
            SetupLogging("warn");
            spdlog::error("{}", why);
            errno = EINVAL;
            return nullptr;
        }
        SetupLogging(cfg.logLevel);
        InterfaceInfo iface;
        bool found = FindInterface(cfg, iface, why);
        auto** list = static_cast<ibv_device**>(calloc(2, sizeof(ibv_device*)));
        if (list == nullptr)
        {
            errno = ENOMEM;
            return nullptr;
        }
        if (!found)
        {
            spdlog::warn("no metaroce0 device: {}", why);
            if (numDevices)
            {
                *numDevices = 0;
            }
            return list;
        }
        g_device.cfg = cfg;
        g_device.iface = iface;
        g_device.valid = true;
        ibv_device& d = g_device.device;
        d.node_type = IBV_NODE_CA;
        d.transport_type = IBV_TRANSPORT_IB;
        std::snprintf(d.name, sizeof(d.name), "metaroce0");
        std::snprintf(d.dev_name, sizeof(d.dev_name), "uverbs-metaroce0");
        std::snprintf(d.dev_path, sizeof(d.dev_path), "/nonexistent/metaroce-verbs/uverbs0");
        std::snprintf(d.ibdev_path, sizeof(d.ibdev_path), "/nonexistent/metaroce-verbs/metaroce0");
        list[0] = &d;
        if (numDevices)
        {
            *numDevices = 1;
        }
        return list;
    }

    void ibv_free_device_list(ibv_device** list)
    {
        free(list);
    }

    const char* ibv_get_device_name(ibv_device* device)
    {
        return device ? device->name : nullptr;
    }

    int ibv_get_device_index(ibv_device* device)
    {
        return device == &g_device.device ? 0 : -1;
    }

    __be64 ibv_get_device_guid(ibv_device* device)
    {
        std::lock_guard<std::mutex> lock(g_deviceMutex);
        return device == &g_device.device ? NodeGuid(g_device.iface) : 0;
    }

    ibv_context* ibv_open_device(ibv_device* device)
    {
        VerbsConfig cfg;
        InterfaceInfo iface;
        {
            std::lock_guard<std::mutex> lock(g_deviceMutex);
            if (device != &g_device.device || !g_device.valid)
            {
                errno = ENODEV;
                return nullptr;
            }
            cfg = g_device.cfg;
            iface = g_device.iface;
        }
        std::string why;
        Runtime* rt = Runtime::Acquire(cfg, iface, why);
        if (rt == nullptr)
        {
            spdlog::error("ibv_open_device(metaroce0): {}", why);
            errno = EIO;
            return nullptr;
        }
        auto* c = new Context();
        c->runtime = rt;
        verbs_context& v = c->vctx;
        v.sz = sizeof(verbs_context);
        v.query_port = QueryPortAttr;
        v.query_device_ex = QueryDeviceEx;
        ibv_context& ctx = v.context;
        ctx.device = device;
        ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
        ctx.num_comp_vectors = 1;
        ctx.cmd_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        ctx.async_fd = eventfd(0, EFD_CLOEXEC); // no asynchronous events are raised
        pthread_mutex_init(&ctx.mutex, nullptr);
        InstallQueueOps(*c);
        return &ctx;
    }

    int ibv_close_device(ibv_context* ctx)
    {
        if (ctx == nullptr)
        {
            return EINVAL;
        }
        Context* c = ToContext(ctx);
        close(ctx->cmd_fd);
        close(ctx->async_fd);
        pthread_mutex_destroy(&ctx->mutex);
        delete c;
        Runtime::Release();
        return 0;
    }

    int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr)
    {
        return QueryDeviceAttr(ctx, attr);
    }

    int ibv_query_port(ibv_context* ctx, uint8_t port, struct _compat_ibv_port_attr* attr)
    {
        // Old binaries: the structure ends before flags.
        return QueryPortAttr(ctx,
                             port,
                             reinterpret_cast<ibv_port_attr*>(attr),
                             offsetof(ibv_port_attr, flags));
    }

    int ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid)
    {
        ibv_gid_entry e;
        if (index < 0 || QueryGidEntry(ctx, port, uint32_t(index), &e) != 0)
        {
            return -1; // the table has one entry
        }
        *gid = e.gid;
        return 0;
    }

    int _ibv_query_gid_ex(ibv_context* ctx,
                          uint32_t port,
                          uint32_t index,
                          ibv_gid_entry* entry,
                          uint32_t flags,
                          size_t entrySize)
    {
        if (flags != 0 || entrySize < sizeof(ibv_gid_entry))
        {
            return EINVAL;
        }
        return QueryGidEntry(ctx, port, index, entry) == 0 ? 0 : ENODATA;
    }

    ssize_t _ibv_query_gid_table(ibv_context* ctx,
                                 ibv_gid_entry* entries,
                                 size_t maxEntries,
                                 uint32_t flags,
                                 size_t entrySize)
    {
        if (flags != 0 || entrySize < sizeof(ibv_gid_entry))
        {
            return -EINVAL;
        }
        if (maxEntries < 1)
        {
            return -EINVAL;
        }
        QueryGidEntry(ctx, 1, 0, entries);
        return 1;
    }

    /// rdma-core's enum ibv_gid_type_sysfs: 0 = IB / RoCE v1, 1 = RoCE v2.
    int ibv_query_gid_type(ibv_context* ctx, uint8_t port, unsigned int index, int* type)
    {
        ibv_gid_entry e;
        if (QueryGidEntry(ctx, port, index, &e) != 0)
        {
            errno = EINVAL;
            return -1;
        }
        *type = 1;
        return 0;
    }

    int ibv_query_pkey(ibv_context* /*ctx*/, uint8_t port, int index, __be16* pkey)
    {
        if (port != 1 || index != 0)
        {
            return -1;
        }
        *pkey = htons(DEFAULT_PKEY);
        return 0;
    }

    int ibv_get_pkey_index(ibv_context* /*ctx*/, uint8_t port, __be16 pkey)
    {
        return port == 1 && ntohs(pkey) == DEFAULT_PKEY ? 0 : -1;
    }

    int ibv_get_async_event(ibv_context* ctx, ibv_async_event* /*event*/)
    {
        // No asynchronous events are raised: block as libibverbs does until one arrives,
        // or fail at once if the application made the fd non-blocking.
        uint64_t v;
        ssize_t n = read(ctx->async_fd, &v, sizeof(v));
        (void)n;
        return -1;
    }

    void ibv_ack_async_event(ibv_async_event* /*event*/)
    {
    }

    int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size)
    {
        std::string path = std::string(dir) + "/" + file;
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
        {
            return -1;
        }
        ssize_t n = read(fd, buf, size);
        close(fd);
        if (n <= 0 || size == 0)
        {
            return -1;
        }
        if (size_t(n) < size)
        {
            buf[n] = '\0';
        }
        if (buf[n - 1] == '\n')
        {
            buf[--n] = '\0';
        }
        return int(n);
    }

    int ibv_get_sysfs_path(char* buf, size_t size)
    {
        std::snprintf(buf, size, "/sys");
        return 0;
    }

    int ibv_fork_init(void)
    {
        return 0; // memory is never pinned: fork needs no precautions
    }

    enum ibv_fork_status ibv_is_fork_initialized(void)
    {
        return IBV_FORK_UNNEEDED;
    }

    int ibv_dontfork_range(void* /*base*/, size_t /*size*/)
    {
        return 0;
    }

    int ibv_dofork_range(void* /*base*/, size_t /*size*/)
    {
        return 0;
    }

} // extern "C"
