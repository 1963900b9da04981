Hello <?php echo $name; ?>,

welcome aboard!
