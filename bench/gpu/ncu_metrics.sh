# Sourced by the ncu scripts of bench/gpu (ncu_shapes.sh, traffic.sh, dram_interval_gpu.sh, ncu_csv_layouts.sh,
# ncu_metric_sets.sh): the 16 metrics `flashsim traffic compare` reads, for ncu --metrics, and the DRAM counters
# alone, which ncu collects in one pass (no replay).
ncu_metrics=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,l1tex__m_xbar2l1tex_read_bytes.sum,\
l1tex__m_l1tex2xbar_write_bytes.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_red.sum,\
l1tex__t_bytes_pipe_lsu_mem_global_op_atom.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,\
l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,\
lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_red.sum
ncu_dram_metrics=dram__bytes_read.sum,dram__bytes_write.sum
