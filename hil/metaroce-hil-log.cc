/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-log.h"

#include <arpa/inet.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace metaroce
{
namespace hil
{

void
SetupLogging(const std::string& level)
{
    auto logger = spdlog::stderr_logger_mt("metaroce");
    logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    logger->set_level(spdlog::level::from_str(level));
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
}

std::string
Ipv4ToString(uint32_t ip)
{
    return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xff) + "." +
           std::to_string((ip >> 8) & 0xff) + "." + std::to_string(ip & 0xff);
}

bool
ParseIpv4(const std::string& text, uint32_t& ip)
{
    in_addr a{};
    if (inet_pton(AF_INET, text.c_str(), &a) != 1)
    {
        return false;
    }
    ip = ntohl(a.s_addr);
    return true;
}

} // namespace hil
} // namespace metaroce
