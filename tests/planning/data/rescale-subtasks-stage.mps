*SENSE:Minimize
NAME          rescale
ROWS
 N  OBJ
 E  one_p_v0
 E  one_p_v1
 E  one_host_0
 E  placed_v1_1
 E  placed_v0_1
 E  placed_v0_3
 E  placed_v0_4
 E  placed_v0_5
 E  placed_v0_6
 E  placed_v0_7
 E  placed_v0_8
 L  vub_v0_5_rpi1
 L  vub_v0_6_rpi1
 L  vub_v0_7_rpi1
 L  vub_v0_8_rpi1
 L  all_up_0_rpi1_0
 L  any_v0_rpi1
 L  all_down_0_rpi1
 L  slots_rpi1_1
 L  cpu_rpi1
 L  memory_server
 L  memory_rpi1
 L  wan_rpi1
 E  whole_v0
 L  whole_v0_1_server
 L  whole_v0_2_server
 L  whole_v0_3_rpi1
 L  whole_v0_3_server
 L  whole_v0_4_rpi1
 L  whole_v0_4_server
 L  whole_v0_5_rpi1
 L  whole_v0_5_server
 L  whole_v0_6_rpi1
 L  whole_v0_6_server
 L  whole_v0_7_rpi1
 L  whole_v0_7_server
 L  whole_v0_8_rpi1
 L  whole_v0_8_server
 E  whole_v1
 L  whole_v1_1_server
 L  whole_v1_2_server
 L  whole_v1_3_server
 L  whole_v1_4_server
 L  whole_v1_5_server
 L  whole_v1_6_server
 L  whole_v1_7_server
 L  whole_v1_8_server
 L  keep_wan
 L  keep_server_cpu
 L  all_v0_rpi1
 G  lat_0_rpi1_0
 G  lat_1_rpi1_0
 L  keep_latency
COLUMNS
    all_up_0_rpi1  all_up_0_rpi1_0   1.000000000000e+00
    all_up_0_rpi1  all_down_0_rpi1  -1.000000000000e+00
    MARK      'MARKER'                 'INTORG'
    all_v0_rpi1  all_v0_rpi1   1.000000000000e+00
    all_v0_rpi1  lat_0_rpi1_0   5.000000000000e+01
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    any_v0_rpi1  any_v0_rpi1  -4.000000000000e+00
    any_v0_rpi1  all_down_0_rpi1   1.000000000000e+00
    any_v0_rpi1  lat_1_rpi1_0  -5.000000000000e+01
    MARK      'MARKER'                 'INTEND'
    delay_0   lat_0_rpi1_0   1.000000000000e+00
    delay_0   keep_latency   1.000000000000e+00
    delay_1   lat_1_rpi1_0   1.000000000000e+00
    delay_1   keep_latency   1.000000000000e+00
    MARK      'MARKER'                 'INTORG'
    whole_v0_rpi1  whole_v0   1.000000000000e+00
    whole_v0_rpi1  whole_v0_3_rpi1  -3.000000000000e+00
    whole_v0_rpi1  whole_v0_4_rpi1  -4.000000000000e+00
    whole_v0_rpi1  whole_v0_5_rpi1  -5.000000000000e+00
    whole_v0_rpi1  whole_v0_6_rpi1  -6.000000000000e+00
    whole_v0_rpi1  whole_v0_7_rpi1  -7.000000000000e+00
    whole_v0_rpi1  whole_v0_8_rpi1  -8.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    whole_v0_server  whole_v0   1.000000000000e+00
    whole_v0_server  whole_v0_1_server  -1.000000000000e+00
    whole_v0_server  whole_v0_2_server  -2.000000000000e+00
    whole_v0_server  whole_v0_3_server  -3.000000000000e+00
    whole_v0_server  whole_v0_4_server  -4.000000000000e+00
    whole_v0_server  whole_v0_5_server  -5.000000000000e+00
    whole_v0_server  whole_v0_6_server  -6.000000000000e+00
    whole_v0_server  whole_v0_7_server  -7.000000000000e+00
    whole_v0_server  whole_v0_8_server  -8.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    whole_v1_server  whole_v1   1.000000000000e+00
    whole_v1_server  whole_v1_1_server  -1.000000000000e+00
    whole_v1_server  whole_v1_2_server  -2.000000000000e+00
    whole_v1_server  whole_v1_3_server  -3.000000000000e+00
    whole_v1_server  whole_v1_4_server  -4.000000000000e+00
    whole_v1_server  whole_v1_5_server  -5.000000000000e+00
    whole_v1_server  whole_v1_6_server  -6.000000000000e+00
    whole_v1_server  whole_v1_7_server  -7.000000000000e+00
    whole_v1_server  whole_v1_8_server  -8.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    x_0_rpi1  one_host_0   1.000000000000e+00
    x_0_rpi1  all_up_0_rpi1_0  -1.000000000000e+00
    x_0_rpi1  cpu_rpi1   1.666666666667e-01
    x_0_rpi1  memory_rpi1   2.560000000000e+02
    x_0_rpi1  wan_rpi1   1.600000000000e+01
    x_0_rpi1  keep_wan   1.600000000000e+01
    x_0_rpi1  lat_0_rpi1_0  -5.000000000000e+01
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v0_1    one_p_v0   1.000000000000e+00
    y_v0_1    placed_v0_1   0.000000000000e+00
    y_v0_1    memory_server   2.560000000000e+02
    y_v0_1    whole_v0_1_server   1.000000000000e+00
    y_v0_1    keep_server_cpu   5.000000000000e-01
    y_v0_1    OBJ        1.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v0_2    one_p_v0   1.000000000000e+00
    y_v0_2    memory_server   5.120000000000e+02
    y_v0_2    whole_v0_2_server   2.000000000000e+00
    y_v0_2    keep_server_cpu   5.000000000000e-01
    y_v0_2    OBJ        2.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v0_3    one_p_v0   1.000000000000e+00
    y_v0_3    placed_v0_3  -3.000000000000e+00
    y_v0_3    OBJ        3.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v0_4    one_p_v0   1.000000000000e+00
    y_v0_4    placed_v0_4  -4.000000000000e+00
    y_v0_4    OBJ        4.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v0_5    one_p_v0   1.000000000000e+00
    y_v0_5    placed_v0_5  -5.000000000000e+00
    y_v0_5    vub_v0_5_rpi1  -4.000000000000e+00
    y_v0_5    OBJ        5.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v0_6    one_p_v0   1.000000000000e+00
    y_v0_6    placed_v0_6  -6.000000000000e+00
    y_v0_6    vub_v0_6_rpi1  -4.000000000000e+00
    y_v0_6    OBJ        6.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v0_7    one_p_v0   1.000000000000e+00
    y_v0_7    placed_v0_7  -7.000000000000e+00
    y_v0_7    vub_v0_7_rpi1  -4.000000000000e+00
    y_v0_7    OBJ        7.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v0_8    one_p_v0   1.000000000000e+00
    y_v0_8    placed_v0_8  -8.000000000000e+00
    y_v0_8    vub_v0_8_rpi1  -4.000000000000e+00
    y_v0_8    OBJ        8.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v1_1    one_p_v1   1.000000000000e+00
    y_v1_1    placed_v1_1   0.000000000000e+00
    y_v1_1    memory_server   2.560000000000e+02
    y_v1_1    whole_v1_1_server   1.000000000000e+00
    y_v1_1    keep_server_cpu   2.000000000000e-02
    y_v1_1    OBJ        1.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v1_2    one_p_v1   1.000000000000e+00
    y_v1_2    memory_server   5.120000000000e+02
    y_v1_2    whole_v1_2_server   2.000000000000e+00
    y_v1_2    keep_server_cpu   2.000000000000e-02
    y_v1_2    OBJ        2.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v1_3    one_p_v1   1.000000000000e+00
    y_v1_3    memory_server   7.680000000000e+02
    y_v1_3    whole_v1_3_server   3.000000000000e+00
    y_v1_3    keep_server_cpu   2.000000000000e-02
    y_v1_3    OBJ        3.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v1_4    one_p_v1   1.000000000000e+00
    y_v1_4    memory_server   1.024000000000e+03
    y_v1_4    whole_v1_4_server   4.000000000000e+00
    y_v1_4    keep_server_cpu   2.000000000000e-02
    y_v1_4    OBJ        4.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v1_5    one_p_v1   1.000000000000e+00
    y_v1_5    memory_server   1.280000000000e+03
    y_v1_5    whole_v1_5_server   5.000000000000e+00
    y_v1_5    keep_server_cpu   2.500000000000e-02
    y_v1_5    OBJ        5.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v1_6    one_p_v1   1.000000000000e+00
    y_v1_6    memory_server   1.536000000000e+03
    y_v1_6    whole_v1_6_server   6.000000000000e+00
    y_v1_6    keep_server_cpu   3.000000000000e-02
    y_v1_6    OBJ        6.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v1_7    one_p_v1   1.000000000000e+00
    y_v1_7    memory_server   1.792000000000e+03
    y_v1_7    whole_v1_7_server   7.000000000000e+00
    y_v1_7    keep_server_cpu   3.500000000000e-02
    y_v1_7    OBJ        7.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    y_v1_8    one_p_v1   1.000000000000e+00
    y_v1_8    memory_server   2.048000000000e+03
    y_v1_8    whole_v1_8_server   8.000000000000e+00
    y_v1_8    keep_server_cpu   4.000000000000e-02
    y_v1_8    OBJ        8.000000000000e+00
    MARK      'MARKER'                 'INTEND'
    MARK      'MARKER'                 'INTORG'
    z_v0_3_rpi1  placed_v0_3   1.000000000000e+00
    z_v0_3_rpi1  any_v0_rpi1   1.000000000000e+00
    z_v0_3_rpi1  slots_rpi1_1   1.000000000000e+00
    z_v0_3_rpi1  cpu_rpi1   5.555555555556e-01
    z_v0_3_rpi1  memory_rpi1   2.560000000000e+02
    z_v0_3_rpi1  wan_rpi1  -5.066666666667e+00
    z_v0_3_rpi1  whole_v0_3_rpi1   1.000000000000e+00
    z_v0_3_rpi1  keep_wan  -5.066666666667e+00
    z_v0_3_rpi1  all_v0_rpi1  -3.333333333333e-01
    MARK      'MARKER'                 'INTEND'
    z_v0_3_server  placed_v0_3   1.000000000000e+00
    z_v0_3_server  memory_server   2.560000000000e+02
    z_v0_3_server  whole_v0_3_server   1.000000000000e+00
    z_v0_3_server  keep_server_cpu   1.666666666667e-01
    MARK      'MARKER'                 'INTORG'
    z_v0_4_rpi1  placed_v0_4   1.000000000000e+00
    z_v0_4_rpi1  any_v0_rpi1   1.000000000000e+00
    z_v0_4_rpi1  slots_rpi1_1   1.000000000000e+00
    z_v0_4_rpi1  cpu_rpi1   4.166666666667e-01
    z_v0_4_rpi1  memory_rpi1   2.560000000000e+02
    z_v0_4_rpi1  wan_rpi1  -3.800000000000e+00
    z_v0_4_rpi1  whole_v0_4_rpi1   1.000000000000e+00
    z_v0_4_rpi1  keep_wan  -3.800000000000e+00
    z_v0_4_rpi1  all_v0_rpi1  -2.500000000000e-01
    MARK      'MARKER'                 'INTEND'
    z_v0_4_server  placed_v0_4   1.000000000000e+00
    z_v0_4_server  memory_server   2.560000000000e+02
    z_v0_4_server  whole_v0_4_server   1.000000000000e+00
    z_v0_4_server  keep_server_cpu   1.250000000000e-01
    MARK      'MARKER'                 'INTORG'
    z_v0_5_rpi1  placed_v0_5   1.000000000000e+00
    z_v0_5_rpi1  vub_v0_5_rpi1   1.000000000000e+00
    z_v0_5_rpi1  any_v0_rpi1   1.000000000000e+00
    z_v0_5_rpi1  slots_rpi1_1   1.000000000000e+00
    z_v0_5_rpi1  cpu_rpi1   3.333333333333e-01
    z_v0_5_rpi1  memory_rpi1   2.560000000000e+02
    z_v0_5_rpi1  wan_rpi1  -3.040000000000e+00
    z_v0_5_rpi1  whole_v0_5_rpi1   1.000000000000e+00
    z_v0_5_rpi1  keep_wan  -3.040000000000e+00
    z_v0_5_rpi1  all_v0_rpi1  -2.000000000000e-01
    MARK      'MARKER'                 'INTEND'
    z_v0_5_server  placed_v0_5   1.000000000000e+00
    z_v0_5_server  memory_server   2.560000000000e+02
    z_v0_5_server  whole_v0_5_server   1.000000000000e+00
    z_v0_5_server  keep_server_cpu   1.000000000000e-01
    MARK      'MARKER'                 'INTORG'
    z_v0_6_rpi1  placed_v0_6   1.000000000000e+00
    z_v0_6_rpi1  vub_v0_6_rpi1   1.000000000000e+00
    z_v0_6_rpi1  any_v0_rpi1   1.000000000000e+00
    z_v0_6_rpi1  slots_rpi1_1   1.000000000000e+00
    z_v0_6_rpi1  cpu_rpi1   2.777777777778e-01
    z_v0_6_rpi1  memory_rpi1   2.560000000000e+02
    z_v0_6_rpi1  wan_rpi1  -2.533333333333e+00
    z_v0_6_rpi1  whole_v0_6_rpi1   1.000000000000e+00
    z_v0_6_rpi1  keep_wan  -2.533333333333e+00
    z_v0_6_rpi1  all_v0_rpi1  -1.666666666667e-01
    MARK      'MARKER'                 'INTEND'
    z_v0_6_server  placed_v0_6   1.000000000000e+00
    z_v0_6_server  memory_server   2.560000000000e+02
    z_v0_6_server  whole_v0_6_server   1.000000000000e+00
    z_v0_6_server  keep_server_cpu   8.333333333333e-02
    MARK      'MARKER'                 'INTORG'
    z_v0_7_rpi1  placed_v0_7   1.000000000000e+00
    z_v0_7_rpi1  vub_v0_7_rpi1   1.000000000000e+00
    z_v0_7_rpi1  any_v0_rpi1   1.000000000000e+00
    z_v0_7_rpi1  slots_rpi1_1   1.000000000000e+00
    z_v0_7_rpi1  cpu_rpi1   2.380952380952e-01
    z_v0_7_rpi1  memory_rpi1   2.560000000000e+02
    z_v0_7_rpi1  wan_rpi1  -2.171428571429e+00
    z_v0_7_rpi1  whole_v0_7_rpi1   1.000000000000e+00
    z_v0_7_rpi1  keep_wan  -2.171428571429e+00
    z_v0_7_rpi1  all_v0_rpi1  -1.428571428571e-01
    MARK      'MARKER'                 'INTEND'
    z_v0_7_server  placed_v0_7   1.000000000000e+00
    z_v0_7_server  memory_server   2.560000000000e+02
    z_v0_7_server  whole_v0_7_server   1.000000000000e+00
    z_v0_7_server  keep_server_cpu   7.142857142857e-02
    MARK      'MARKER'                 'INTORG'
    z_v0_8_rpi1  placed_v0_8   1.000000000000e+00
    z_v0_8_rpi1  vub_v0_8_rpi1   1.000000000000e+00
    z_v0_8_rpi1  any_v0_rpi1   1.000000000000e+00
    z_v0_8_rpi1  slots_rpi1_1   1.000000000000e+00
    z_v0_8_rpi1  cpu_rpi1   2.083333333333e-01
    z_v0_8_rpi1  memory_rpi1   2.560000000000e+02
    z_v0_8_rpi1  wan_rpi1  -1.900000000000e+00
    z_v0_8_rpi1  whole_v0_8_rpi1   1.000000000000e+00
    z_v0_8_rpi1  keep_wan  -1.900000000000e+00
    z_v0_8_rpi1  all_v0_rpi1  -1.250000000000e-01
    MARK      'MARKER'                 'INTEND'
    z_v0_8_server  placed_v0_8   1.000000000000e+00
    z_v0_8_server  memory_server   2.560000000000e+02
    z_v0_8_server  whole_v0_8_server   1.000000000000e+00
    z_v0_8_server  keep_server_cpu   6.250000000000e-02
RHS
    RHS       one_p_v0   1.000000000000e+00
    RHS       one_p_v1   1.000000000000e+00
    RHS       one_host_0   1.000000000000e+00
    RHS       placed_v1_1   0.000000000000e+00
    RHS       placed_v0_1   0.000000000000e+00
    RHS       placed_v0_3   0.000000000000e+00
    RHS       placed_v0_4   0.000000000000e+00
    RHS       placed_v0_5   0.000000000000e+00
    RHS       placed_v0_6   0.000000000000e+00
    RHS       placed_v0_7   0.000000000000e+00
    RHS       placed_v0_8   0.000000000000e+00
    RHS       vub_v0_5_rpi1   0.000000000000e+00
    RHS       vub_v0_6_rpi1   0.000000000000e+00
    RHS       vub_v0_7_rpi1   0.000000000000e+00
    RHS       vub_v0_8_rpi1   0.000000000000e+00
    RHS       all_up_0_rpi1_0   0.000000000000e+00
    RHS       any_v0_rpi1   0.000000000000e+00
    RHS       all_down_0_rpi1   0.000000000000e+00
    RHS       slots_rpi1_1   4.000000000000e+00
    RHS       cpu_rpi1   3.200000000000e+00
    RHS       memory_server   1.310720000000e+04
    RHS       memory_rpi1   3.276800000000e+03
    RHS       wan_rpi1   1.800000000000e+01
    RHS       whole_v0   1.000000000000e+00
    RHS       whole_v0_1_server   0.000000000000e+00
    RHS       whole_v0_2_server   0.000000000000e+00
    RHS       whole_v0_3_rpi1   0.000000000000e+00
    RHS       whole_v0_3_server   0.000000000000e+00
    RHS       whole_v0_4_rpi1   0.000000000000e+00
    RHS       whole_v0_4_server   0.000000000000e+00
    RHS       whole_v0_5_rpi1   0.000000000000e+00
    RHS       whole_v0_5_server   0.000000000000e+00
    RHS       whole_v0_6_rpi1   0.000000000000e+00
    RHS       whole_v0_6_server   0.000000000000e+00
    RHS       whole_v0_7_rpi1   0.000000000000e+00
    RHS       whole_v0_7_server   0.000000000000e+00
    RHS       whole_v0_8_rpi1   0.000000000000e+00
    RHS       whole_v0_8_server   0.000000000000e+00
    RHS       whole_v1   1.000000000000e+00
    RHS       whole_v1_1_server   0.000000000000e+00
    RHS       whole_v1_2_server   0.000000000000e+00
    RHS       whole_v1_3_server   0.000000000000e+00
    RHS       whole_v1_4_server   0.000000000000e+00
    RHS       whole_v1_5_server   0.000000000000e+00
    RHS       whole_v1_6_server   0.000000000000e+00
    RHS       whole_v1_7_server   0.000000000000e+00
    RHS       whole_v1_8_server   0.000000000000e+00
    RHS       keep_wan   8.000009000000e-01
    RHS       keep_server_cpu   2.000012000000e-02
    RHS       all_v0_rpi1   0.000000000000e+00
    RHS       lat_0_rpi1_0   0.000000000000e+00
    RHS       lat_1_rpi1_0   0.000000000000e+00
    RHS       keep_latency   1.000001001000e+02
BOUNDS
 UP BND       all_up_0_rpi1   1.000000000000e+00
 BV BND       all_v0_rpi1
 BV BND       any_v0_rpi1
 BV BND       whole_v0_rpi1
 BV BND       whole_v0_server
 BV BND       whole_v1_server
 BV BND       x_0_rpi1
 BV BND       y_v0_1  
 BV BND       y_v0_2  
 BV BND       y_v0_3  
 BV BND       y_v0_4  
 BV BND       y_v0_5  
 BV BND       y_v0_6  
 BV BND       y_v0_7  
 BV BND       y_v0_8  
 BV BND       y_v1_1  
 BV BND       y_v1_2  
 BV BND       y_v1_3  
 BV BND       y_v1_4  
 BV BND       y_v1_5  
 BV BND       y_v1_6  
 BV BND       y_v1_7  
 BV BND       y_v1_8  
 UP BND       z_v0_3_rpi1   3.000000000000e+00
 UP BND       z_v0_3_server   3.000000000000e+00
 UP BND       z_v0_4_rpi1   4.000000000000e+00
 UP BND       z_v0_4_server   4.000000000000e+00
 UP BND       z_v0_5_rpi1   5.000000000000e+00
 UP BND       z_v0_5_server   5.000000000000e+00
 UP BND       z_v0_6_rpi1   6.000000000000e+00
 UP BND       z_v0_6_server   6.000000000000e+00
 UP BND       z_v0_7_rpi1   7.000000000000e+00
 UP BND       z_v0_7_server   7.000000000000e+00
 UP BND       z_v0_8_rpi1   8.000000000000e+00
 UP BND       z_v0_8_server   8.000000000000e+00
ENDATA
