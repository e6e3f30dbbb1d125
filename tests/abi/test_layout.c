// SPDX-License-Identifier: MIT
/*
 * Compile-time check that the system <infiniband/verbs.h> (rdma-core 44)
 * still has the layouts the installed clients were compiled against
 * (docs/abi.md; research abi.md section 2.4, measured on x86-64).  Clients
 * compile these offsets into their inline wrappers, so softib must allocate
 * and fill objects with exactly these layouts.  If this file stops
 * compiling, the build is using a different verbs.h and the drop-in is not
 * ABI compatible with the installed binaries.
 */
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define SIZE(type, n) _Static_assert(sizeof(type) == (n), "sizeof(" #type ") != " #n)
#define OFF(type, member, n) \
	_Static_assert(offsetof(type, member) == (n), "offsetof(" #type ", " #member ") != " #n)

#if !defined(__x86_64__)
#error "the layouts below were measured on x86-64"
#endif

/* pthread objects embedded in verbs objects */
SIZE(pthread_mutex_t, 40);
SIZE(pthread_cond_t, 48);

/* ---- device and context ----------------------------------------------- */
SIZE(struct ibv_device, 664);
OFF(struct ibv_device, _ops, 0);
OFF(struct ibv_device, node_type, 16);
OFF(struct ibv_device, transport_type, 20);
OFF(struct ibv_device, name, 24);
OFF(struct ibv_device, dev_name, 88);
OFF(struct ibv_device, dev_path, 152);
OFF(struct ibv_device, ibdev_path, 408);

SIZE(struct ibv_context_ops, 256);
OFF(struct ibv_context_ops, _compat_query_device, 0);
OFF(struct ibv_context_ops, _compat_query_port, 8);
OFF(struct ibv_context_ops, alloc_mw, 56);
OFF(struct ibv_context_ops, bind_mw, 64);
OFF(struct ibv_context_ops, dealloc_mw, 72);
OFF(struct ibv_context_ops, poll_cq, 88);
OFF(struct ibv_context_ops, req_notify_cq, 96);
OFF(struct ibv_context_ops, post_srq_recv, 160);
OFF(struct ibv_context_ops, post_send, 200);
OFF(struct ibv_context_ops, post_recv, 208);
OFF(struct ibv_context_ops, _compat_async_event, 248);

SIZE(struct ibv_context, 328);
OFF(struct ibv_context, device, 0);
OFF(struct ibv_context, ops, 8);
OFF(struct ibv_context, cmd_fd, 264);
OFF(struct ibv_context, async_fd, 268);
OFF(struct ibv_context, num_comp_vectors, 272);
OFF(struct ibv_context, mutex, 280);
OFF(struct ibv_context, abi_compat, 320);

/* verbs_context: the ops live at negative offsets from &vctx->context */
SIZE(struct verbs_context, 648);
OFF(struct verbs_context, query_port, 0);
OFF(struct verbs_context, advise_mr, 8);
OFF(struct verbs_context, create_cq_ex, 200);	/* ctx - 120 */
OFF(struct verbs_context, priv, 208);		/* ctx - 112 */
OFF(struct verbs_context, query_device_ex, 216);	/* ctx - 104 */
OFF(struct verbs_context, ibv_destroy_flow, 224);
OFF(struct verbs_context, ibv_create_flow, 240);
OFF(struct verbs_context, open_qp, 256);		/* ctx - 64 */
OFF(struct verbs_context, create_qp_ex, 264);	/* ctx - 56 */
OFF(struct verbs_context, get_srq_num, 272);
OFF(struct verbs_context, create_srq_ex, 280);
OFF(struct verbs_context, open_xrcd, 288);
OFF(struct verbs_context, close_xrcd, 296);
OFF(struct verbs_context, sz, 312);		/* ctx - 8 */
OFF(struct verbs_context, context, 320);

/* ---- PD, MR, channel, CQ -------------------------------------------------- */
SIZE(struct ibv_pd, 16);
OFF(struct ibv_pd, context, 0);
OFF(struct ibv_pd, handle, 8);

SIZE(struct ibv_mr, 48);
OFF(struct ibv_mr, context, 0);
OFF(struct ibv_mr, pd, 8);
OFF(struct ibv_mr, addr, 16);
OFF(struct ibv_mr, length, 24);
OFF(struct ibv_mr, handle, 32);
OFF(struct ibv_mr, lkey, 36);
OFF(struct ibv_mr, rkey, 40);

SIZE(struct ibv_comp_channel, 16);
OFF(struct ibv_comp_channel, context, 0);
OFF(struct ibv_comp_channel, fd, 8);
OFF(struct ibv_comp_channel, refcnt, 12);

SIZE(struct ibv_cq, 128);
OFF(struct ibv_cq, context, 0);
OFF(struct ibv_cq, channel, 8);
OFF(struct ibv_cq, cq_context, 16);
OFF(struct ibv_cq, handle, 24);
OFF(struct ibv_cq, cqe, 28);
OFF(struct ibv_cq, mutex, 32);
OFF(struct ibv_cq, cond, 72);
OFF(struct ibv_cq, comp_events_completed, 120);
OFF(struct ibv_cq, async_events_completed, 124);

SIZE(struct ibv_cq_ex, 288);
OFF(struct ibv_cq_ex, context, 0);	/* starts with the ibv_cq layout */
OFF(struct ibv_cq_ex, channel, 8);
OFF(struct ibv_cq_ex, cq_context, 16);
OFF(struct ibv_cq_ex, handle, 24);
OFF(struct ibv_cq_ex, cqe, 28);
OFF(struct ibv_cq_ex, mutex, 32);
OFF(struct ibv_cq_ex, cond, 72);
OFF(struct ibv_cq_ex, comp_events_completed, 120);
OFF(struct ibv_cq_ex, async_events_completed, 124);
OFF(struct ibv_cq_ex, comp_mask, 128);
OFF(struct ibv_cq_ex, status, 132);
OFF(struct ibv_cq_ex, wr_id, 136);
OFF(struct ibv_cq_ex, start_poll, 144);
OFF(struct ibv_cq_ex, next_poll, 152);
OFF(struct ibv_cq_ex, end_poll, 160);
OFF(struct ibv_cq_ex, read_opcode, 168);
OFF(struct ibv_cq_ex, read_vendor_err, 176);
OFF(struct ibv_cq_ex, read_byte_len, 184);
OFF(struct ibv_cq_ex, read_imm_data, 192);
OFF(struct ibv_cq_ex, read_qp_num, 200);
OFF(struct ibv_cq_ex, read_src_qp, 208);
OFF(struct ibv_cq_ex, read_wc_flags, 216);
OFF(struct ibv_cq_ex, read_slid, 224);
OFF(struct ibv_cq_ex, read_sl, 232);
OFF(struct ibv_cq_ex, read_dlid_path_bits, 240);
OFF(struct ibv_cq_ex, read_completion_ts, 248);
OFF(struct ibv_cq_ex, read_cvlan, 256);
OFF(struct ibv_cq_ex, read_flow_tag, 264);
OFF(struct ibv_cq_ex, read_tm_info, 272);
OFF(struct ibv_cq_ex, read_completion_wallclock_ns, 280);

/* ---- QP ------------------------------------------------------------------- */
SIZE(struct ibv_qp, 160);
OFF(struct ibv_qp, context, 0);
OFF(struct ibv_qp, qp_context, 8);
OFF(struct ibv_qp, pd, 16);
OFF(struct ibv_qp, send_cq, 24);
OFF(struct ibv_qp, recv_cq, 32);
OFF(struct ibv_qp, srq, 40);
OFF(struct ibv_qp, handle, 48);
OFF(struct ibv_qp, qp_num, 52);
OFF(struct ibv_qp, state, 56);
OFF(struct ibv_qp, qp_type, 60);
OFF(struct ibv_qp, mutex, 64);
OFF(struct ibv_qp, cond, 104);
OFF(struct ibv_qp, events_completed, 152);

SIZE(struct ibv_qp_ex, 352);
OFF(struct ibv_qp_ex, qp_base, 0);
OFF(struct ibv_qp_ex, comp_mask, 160);
OFF(struct ibv_qp_ex, wr_id, 168);
OFF(struct ibv_qp_ex, wr_flags, 176);
OFF(struct ibv_qp_ex, wr_atomic_cmp_swp, 184);
OFF(struct ibv_qp_ex, wr_atomic_fetch_add, 192);
OFF(struct ibv_qp_ex, wr_bind_mw, 200);
OFF(struct ibv_qp_ex, wr_local_inv, 208);
OFF(struct ibv_qp_ex, wr_rdma_read, 216);
OFF(struct ibv_qp_ex, wr_rdma_write, 224);
OFF(struct ibv_qp_ex, wr_rdma_write_imm, 232);
OFF(struct ibv_qp_ex, wr_send, 240);
OFF(struct ibv_qp_ex, wr_send_imm, 248);
OFF(struct ibv_qp_ex, wr_send_inv, 256);
OFF(struct ibv_qp_ex, wr_send_tso, 264);
OFF(struct ibv_qp_ex, wr_set_ud_addr, 272);
OFF(struct ibv_qp_ex, wr_set_xrc_srqn, 280);
OFF(struct ibv_qp_ex, wr_set_inline_data, 288);
OFF(struct ibv_qp_ex, wr_set_inline_data_list, 296);
OFF(struct ibv_qp_ex, wr_set_sge, 304);
OFF(struct ibv_qp_ex, wr_set_sge_list, 312);
OFF(struct ibv_qp_ex, wr_start, 320);
OFF(struct ibv_qp_ex, wr_complete, 328);
OFF(struct ibv_qp_ex, wr_abort, 336);
OFF(struct ibv_qp_ex, wr_atomic_write, 344);

SIZE(struct ibv_qp_attr, 144);
OFF(struct ibv_qp_attr, qp_state, 0);
OFF(struct ibv_qp_attr, cur_qp_state, 4);
OFF(struct ibv_qp_attr, path_mtu, 8);
OFF(struct ibv_qp_attr, path_mig_state, 12);
OFF(struct ibv_qp_attr, qkey, 16);
OFF(struct ibv_qp_attr, rq_psn, 20);
OFF(struct ibv_qp_attr, sq_psn, 24);
OFF(struct ibv_qp_attr, dest_qp_num, 28);
OFF(struct ibv_qp_attr, qp_access_flags, 32);
OFF(struct ibv_qp_attr, cap, 36);
OFF(struct ibv_qp_attr, ah_attr, 56);
OFF(struct ibv_qp_attr, alt_ah_attr, 88);
OFF(struct ibv_qp_attr, pkey_index, 120);
OFF(struct ibv_qp_attr, alt_pkey_index, 122);
OFF(struct ibv_qp_attr, en_sqd_async_notify, 124);
OFF(struct ibv_qp_attr, sq_draining, 125);
OFF(struct ibv_qp_attr, max_rd_atomic, 126);
OFF(struct ibv_qp_attr, max_dest_rd_atomic, 127);
OFF(struct ibv_qp_attr, min_rnr_timer, 128);
OFF(struct ibv_qp_attr, port_num, 129);
OFF(struct ibv_qp_attr, timeout, 130);
OFF(struct ibv_qp_attr, retry_cnt, 131);
OFF(struct ibv_qp_attr, rnr_retry, 132);
OFF(struct ibv_qp_attr, alt_port_num, 133);
OFF(struct ibv_qp_attr, alt_timeout, 134);
OFF(struct ibv_qp_attr, rate_limit, 136);
SIZE(struct ibv_qp_cap, 20);

SIZE(struct ibv_qp_init_attr, 64);
OFF(struct ibv_qp_init_attr, qp_context, 0);
OFF(struct ibv_qp_init_attr, send_cq, 8);
OFF(struct ibv_qp_init_attr, recv_cq, 16);
OFF(struct ibv_qp_init_attr, srq, 24);
OFF(struct ibv_qp_init_attr, cap, 32);
OFF(struct ibv_qp_init_attr, qp_type, 52);
OFF(struct ibv_qp_init_attr, sq_sig_all, 56);

SIZE(struct ibv_qp_init_attr_ex, 136);
OFF(struct ibv_qp_init_attr_ex, qp_type, 52);
OFF(struct ibv_qp_init_attr_ex, sq_sig_all, 56);
OFF(struct ibv_qp_init_attr_ex, comp_mask, 60);
OFF(struct ibv_qp_init_attr_ex, pd, 64);
OFF(struct ibv_qp_init_attr_ex, xrcd, 72);
OFF(struct ibv_qp_init_attr_ex, create_flags, 80);
OFF(struct ibv_qp_init_attr_ex, max_tso_header, 84);
OFF(struct ibv_qp_init_attr_ex, rwq_ind_tbl, 88);
OFF(struct ibv_qp_init_attr_ex, rx_hash_conf, 96);
OFF(struct ibv_qp_init_attr_ex, source_qpn, 120);
OFF(struct ibv_qp_init_attr_ex, send_ops_flags, 128);

/* ---- work requests and completions ----------------------------------------- */
SIZE(struct ibv_sge, 16);
OFF(struct ibv_sge, addr, 0);
OFF(struct ibv_sge, length, 8);
OFF(struct ibv_sge, lkey, 12);

SIZE(struct ibv_send_wr, 128);
OFF(struct ibv_send_wr, wr_id, 0);
OFF(struct ibv_send_wr, next, 8);
OFF(struct ibv_send_wr, sg_list, 16);
OFF(struct ibv_send_wr, num_sge, 24);
OFF(struct ibv_send_wr, opcode, 28);
OFF(struct ibv_send_wr, send_flags, 32);
OFF(struct ibv_send_wr, imm_data, 36);
OFF(struct ibv_send_wr, invalidate_rkey, 36);
OFF(struct ibv_send_wr, wr.rdma.remote_addr, 40);
OFF(struct ibv_send_wr, wr.rdma.rkey, 48);
OFF(struct ibv_send_wr, wr.atomic.remote_addr, 40);
OFF(struct ibv_send_wr, wr.atomic.compare_add, 48);
OFF(struct ibv_send_wr, wr.atomic.swap, 56);
OFF(struct ibv_send_wr, wr.atomic.rkey, 64);
OFF(struct ibv_send_wr, wr.ud.ah, 40);
OFF(struct ibv_send_wr, wr.ud.remote_qpn, 48);
OFF(struct ibv_send_wr, wr.ud.remote_qkey, 52);
OFF(struct ibv_send_wr, qp_type.xrc.remote_srqn, 72);
OFF(struct ibv_send_wr, bind_mw, 80);
OFF(struct ibv_send_wr, tso, 80);

SIZE(struct ibv_recv_wr, 32);
OFF(struct ibv_recv_wr, wr_id, 0);
OFF(struct ibv_recv_wr, next, 8);
OFF(struct ibv_recv_wr, sg_list, 16);
OFF(struct ibv_recv_wr, num_sge, 24);

SIZE(struct ibv_wc, 48);
OFF(struct ibv_wc, wr_id, 0);
OFF(struct ibv_wc, status, 8);
OFF(struct ibv_wc, opcode, 12);
OFF(struct ibv_wc, vendor_err, 16);
OFF(struct ibv_wc, byte_len, 20);
OFF(struct ibv_wc, imm_data, 24);
OFF(struct ibv_wc, qp_num, 28);
OFF(struct ibv_wc, src_qp, 32);
OFF(struct ibv_wc, wc_flags, 36);
OFF(struct ibv_wc, pkey_index, 40);
OFF(struct ibv_wc, slid, 42);
OFF(struct ibv_wc, sl, 44);
OFF(struct ibv_wc, dlid_path_bits, 45);

/* ---- SRQ, AH, other objects -------------------------------------------------- */
SIZE(struct ibv_srq, 128);
OFF(struct ibv_srq, context, 0);
OFF(struct ibv_srq, srq_context, 8);
OFF(struct ibv_srq, pd, 16);
OFF(struct ibv_srq, handle, 24);
OFF(struct ibv_srq, mutex, 32);
OFF(struct ibv_srq, cond, 72);
OFF(struct ibv_srq, events_completed, 120);

SIZE(struct ibv_ah, 24);
OFF(struct ibv_ah, context, 0);
OFF(struct ibv_ah, pd, 8);
OFF(struct ibv_ah, handle, 16);

SIZE(struct ibv_global_route, 24);
OFF(struct ibv_global_route, dgid, 0);
OFF(struct ibv_global_route, flow_label, 16);
OFF(struct ibv_global_route, sgid_index, 20);
OFF(struct ibv_global_route, hop_limit, 21);
OFF(struct ibv_global_route, traffic_class, 22);

SIZE(struct ibv_ah_attr, 32);
OFF(struct ibv_ah_attr, grh, 0);
OFF(struct ibv_ah_attr, dlid, 24);
OFF(struct ibv_ah_attr, sl, 26);
OFF(struct ibv_ah_attr, src_path_bits, 27);
OFF(struct ibv_ah_attr, static_rate, 28);
OFF(struct ibv_ah_attr, is_global, 29);
OFF(struct ibv_ah_attr, port_num, 30);

SIZE(struct ibv_xrcd, 8);
SIZE(struct ibv_mw, 32);
SIZE(struct ibv_wq, 152);
OFF(struct ibv_wq, post_recv, 48);
SIZE(struct ibv_dm, 32);
OFF(struct ibv_dm, memcpy_to_dm, 8);
OFF(struct ibv_dm, memcpy_from_dm, 16);
SIZE(struct ibv_td, 8);
SIZE(struct ibv_flow, 24);

SIZE(struct ibv_srq_init_attr, 24);
SIZE(struct ibv_srq_init_attr_ex, 64);
SIZE(struct ibv_srq_attr, 12);
SIZE(struct ibv_xrcd_init_attr, 12);
SIZE(struct ibv_qp_open_attr, 32);

SIZE(struct ibv_cq_init_attr_ex, 56);
OFF(struct ibv_cq_init_attr_ex, cqe, 0);
OFF(struct ibv_cq_init_attr_ex, cq_context, 8);
OFF(struct ibv_cq_init_attr_ex, channel, 16);
OFF(struct ibv_cq_init_attr_ex, comp_vector, 24);
OFF(struct ibv_cq_init_attr_ex, wc_flags, 32);
OFF(struct ibv_cq_init_attr_ex, comp_mask, 40);
OFF(struct ibv_cq_init_attr_ex, flags, 44);
OFF(struct ibv_cq_init_attr_ex, parent_domain, 48);

/* ---- attributes ------------------------------------------------------------- */
SIZE(struct ibv_port_attr, 52);
OFF(struct ibv_port_attr, state, 0);
OFF(struct ibv_port_attr, max_mtu, 4);
OFF(struct ibv_port_attr, active_mtu, 8);
OFF(struct ibv_port_attr, gid_tbl_len, 12);
OFF(struct ibv_port_attr, port_cap_flags, 16);
OFF(struct ibv_port_attr, max_msg_sz, 20);
OFF(struct ibv_port_attr, bad_pkey_cntr, 24);
OFF(struct ibv_port_attr, qkey_viol_cntr, 28);
OFF(struct ibv_port_attr, pkey_tbl_len, 32);
OFF(struct ibv_port_attr, lid, 34);
OFF(struct ibv_port_attr, sm_lid, 36);
OFF(struct ibv_port_attr, lmc, 38);
OFF(struct ibv_port_attr, max_vl_num, 39);
OFF(struct ibv_port_attr, sm_sl, 40);
OFF(struct ibv_port_attr, subnet_timeout, 41);
OFF(struct ibv_port_attr, init_type_reply, 42);
OFF(struct ibv_port_attr, active_width, 43);
OFF(struct ibv_port_attr, active_speed, 44);
OFF(struct ibv_port_attr, phys_state, 45);
OFF(struct ibv_port_attr, link_layer, 46);
OFF(struct ibv_port_attr, flags, 47);	/* the 1.1 compat struct ends after this: 48 bytes */
OFF(struct ibv_port_attr, port_cap_flags2, 48);

SIZE(struct ibv_device_attr, 232);
OFF(struct ibv_device_attr, fw_ver, 0);
OFF(struct ibv_device_attr, node_guid, 64);
OFF(struct ibv_device_attr, sys_image_guid, 72);
OFF(struct ibv_device_attr, max_mr_size, 80);
OFF(struct ibv_device_attr, page_size_cap, 88);
OFF(struct ibv_device_attr, vendor_id, 96);
OFF(struct ibv_device_attr, vendor_part_id, 100);
OFF(struct ibv_device_attr, hw_ver, 104);
OFF(struct ibv_device_attr, max_qp, 108);
OFF(struct ibv_device_attr, max_qp_wr, 112);
OFF(struct ibv_device_attr, device_cap_flags, 116);
OFF(struct ibv_device_attr, max_sge, 120);
OFF(struct ibv_device_attr, max_sge_rd, 124);
OFF(struct ibv_device_attr, max_cq, 128);
OFF(struct ibv_device_attr, max_cqe, 132);
OFF(struct ibv_device_attr, max_mr, 136);
OFF(struct ibv_device_attr, max_pd, 140);
OFF(struct ibv_device_attr, max_qp_rd_atom, 144);
OFF(struct ibv_device_attr, atomic_cap, 164);
OFF(struct ibv_device_attr, max_ah, 200);
OFF(struct ibv_device_attr, max_srq, 212);
OFF(struct ibv_device_attr, max_srq_wr, 216);
OFF(struct ibv_device_attr, max_srq_sge, 220);
OFF(struct ibv_device_attr, max_pkeys, 224);
OFF(struct ibv_device_attr, local_ca_ack_delay, 226);
OFF(struct ibv_device_attr, phys_port_cnt, 227);

SIZE(struct ibv_device_attr_ex, 400);
OFF(struct ibv_device_attr_ex, orig_attr, 0);
OFF(struct ibv_device_attr_ex, comp_mask, 232);
OFF(struct ibv_device_attr_ex, odp_caps, 240);
OFF(struct ibv_device_attr_ex, completion_timestamp_mask, 264);
OFF(struct ibv_device_attr_ex, hca_core_clock, 272);
OFF(struct ibv_device_attr_ex, device_cap_flags_ex, 280);
OFF(struct ibv_device_attr_ex, tso_caps, 288);
OFF(struct ibv_device_attr_ex, rss_caps, 296);
OFF(struct ibv_device_attr_ex, max_wq_type_rq, 328);
OFF(struct ibv_device_attr_ex, packet_pacing_caps, 332);
OFF(struct ibv_device_attr_ex, raw_packet_caps, 344);
OFF(struct ibv_device_attr_ex, tm_caps, 348);
OFF(struct ibv_device_attr_ex, cq_mod_caps, 368);
OFF(struct ibv_device_attr_ex, max_dm_size, 376);
OFF(struct ibv_device_attr_ex, pci_atomic_caps, 384);
OFF(struct ibv_device_attr_ex, xrc_odp_caps, 392);
OFF(struct ibv_device_attr_ex, phys_port_cnt_ex, 396);

SIZE(struct ibv_async_event, 16);
OFF(struct ibv_async_event, element, 0);
OFF(struct ibv_async_event, event_type, 8);

SIZE(union ibv_gid, 16);
SIZE(struct ibv_gid_entry, 32);
OFF(struct ibv_gid_entry, gid, 0);
OFF(struct ibv_gid_entry, gid_index, 16);
OFF(struct ibv_gid_entry, port_num, 20);
OFF(struct ibv_gid_entry, gid_type, 24);
OFF(struct ibv_gid_entry, ndev_ifindex, 28);
SIZE(struct ibv_grh, 40);

/* ---- constants compiled into clients ------------------------------------------- */
_Static_assert(__VERBS_ABI_IS_EXTENDED == (void *)UINTPTR_MAX, "__VERBS_ABI_IS_EXTENDED");
_Static_assert(IBV_ACCESS_OPTIONAL_RANGE == 0x3ff00000, "IBV_ACCESS_OPTIONAL_RANGE");
_Static_assert(IBV_SYSFS_NAME_MAX == 64, "IBV_SYSFS_NAME_MAX");
_Static_assert(IBV_SYSFS_PATH_MAX == 256, "IBV_SYSFS_PATH_MAX");
_Static_assert(IBV_FORK_UNNEEDED == 2, "IBV_FORK_UNNEEDED");

int main(void)
{
	return 0;
}
