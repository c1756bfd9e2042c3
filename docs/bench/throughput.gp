set terminal pngcairo size 900,520 font 'DejaVu Sans,10'
set output 'throughput.png'
set title 'Acquire+release cycles per second against connections'
set logscale x 2
set logscale y 10
set grid
set key outside right top
set xlabel 'connections'
set ylabel 'cycles/s (median of rounds)'
plot 'throughput_0.dat' using 1:2 with linespoints lw 2 pt 7 title 'fencelock, HTTP', 'throughput_1.dat' using 1:2 with linespoints lw 2 pt 7 title 'trivial Beast server, HTTP', 'throughput_2.dat' using 1:2 with linespoints lw 2 pt 7 title 'etcd 3.4, HTTP', 'throughput_3.dat' using 1:2 with linespoints lw 2 pt 7 title 'fencelock, WebSocket (pipelined)'
