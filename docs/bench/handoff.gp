set terminal pngcairo size 900,520 font 'DejaVu Sans,10'
set output 'handoff.png'
set title 'Hand-off latency, one hot lock: release sent -> next grant received'
set logscale x 10
set grid
set key off
set yrange [0:1]
set xlabel 'ms'
set ylabel 'fraction of hand-offs at or below'
plot 'handoff.dat' using 1:2 with steps lw 2
